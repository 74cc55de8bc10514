"""The schema of an experiment file, checked once, at the edge, before any work.

An experiment file (:mod:`convlab.systems.file`) may come from someone else, so each
value is checked here against a strict schema (msgspec structs that refuse unknown fields, with
bounds on every number and every list) and then against the registries (strategies, fusion
methods and their parameters, resurrection policies, text formats). The first problem is one
``ValueError`` naming the file, the key (``systems[2].tuning.folds``, with the system's name)
and the reason. The bounds:

- the ``options`` table: its keys, types and bounds are generated from the search options'
  configs (:func:`convlab.retrieval.options.flat_schema`; each config's fields declare their
  bounds, :mod:`convlab.config`), nothing copied here;
- a name: 1 to 200 characters, no control characters (:func:`convlab.systems.names.check_name`),
  unique in the file and among the default systems it includes;
- weights: finite, 0 to 1,000,000, not all 0; at most :data:`MAX_VIEWS` views;
- tuning: at most :data:`MAX_VALUES` values per grid axis and :data:`MAX_SETTINGS` settings in
  the grid, ``samples`` 1 to 10,000, ``folds`` 2 to :data:`MAX_FOLDS`, ``seed`` 0 to 2**32 - 1;
- at most :data:`MAX_SYSTEMS` systems; TOML nested deeper than Python's parser can go is refused.

Example:
    >>> spec = parse_experiment({"systems": [{"name": "m", "strategy": "message"}]}, "x.toml")
    >>> spec.defaults, [s.name for s in spec.systems]
    (False, ['m'])
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

import msgspec
from msgspec import UNSET, Meta, UnsetType

from convlab.systems.names import NAME_MAX, check_name, escaped, shown
from convlab.systems.system import System, Tuning, View

__all__ = [
    "MAX_FOLDS",
    "MAX_SETTINGS",
    "MAX_SYSTEMS",
    "MAX_VALUES",
    "MAX_VIEWS",
    "Experiment",
    "parse_experiment",
]

MAX_SYSTEMS = 256
MAX_VIEWS = 32
MAX_VALUES = 1_000
"""The most values one axis of a tuning grid may have (a 1,001-value grid is refused)."""
MAX_SETTINGS = 100_000
"""The most settings a tuning grid may hold (the grid is made whole before it is sampled)."""
MAX_FOLDS = 100

_Name = Annotated[str, Meta(min_length=1, max_length=NAME_MAX)]
_Short = Annotated[str, Meta(min_length=1, max_length=100)]
_Weight = Annotated[float, Meta(ge=0.0, le=1e6)]
_Count = Annotated[int, Meta(ge=1, le=10_000)]
_Param = Annotated[int, Meta(ge=0, le=1_000_000)] | Annotated[float, Meta(ge=0.0, le=1e6)] | _Short


class _Strict(msgspec.Struct, forbid_unknown_fields=True):
    """A table whose unknown keys are refused."""


class _Keys(_Strict):
    """:class:`convlab.pipeline.keys.KeyExpansion`, each key optional and bounded."""

    source: Literal["unit", "session"] | UnsetType = UNSET
    phrases: Annotated[int, Meta(ge=1, le=50)] | UnsetType = UNSET
    max_words: Annotated[int, Meta(ge=1, le=5)] | UnsetType = UNSET


def _struct(name: str, keys: list[tuple[str, Any]]) -> type[msgspec.Struct]:
    """A strict struct of ``keys`` (``(key, type)``), each optional."""
    fields = [(key, Union[kind, UnsetType], UNSET) for key, kind in keys]  # noqa: UP007
    return msgspec.defstruct(name, fields, bases=(_Strict,), forbid_unknown_fields=True)


def _options_structs() -> tuple[type[msgspec.Struct], dict[str, type[msgspec.Struct]]]:
    """The ``options`` table's struct, generated from the options' configs, and its tables'.

    Each key, its type and its bounds are the config's own (:func:`convlab.config.fields`,
    :func:`convlab.retrieval.options.flat_schema`): a scalar option, a ``switch`` config's
    ``true`` and fields, a ``value`` config's one field, a ``table`` config's struct of its
    fields. Returns the options' struct and the tables' structs by key.
    """
    from convlab.config import fields, is_config
    from convlab.retrieval.options import flat_schema

    tables: dict[str, type[msgspec.Struct]] = {}
    keys = []
    for key, kind, in_file in flat_schema():
        if not in_file:
            continue
        if is_config(kind):
            given = [(f.name, f.file) for f in fields(kind) if f.in_file]
            kind = tables[key] = _struct(f"_{kind.__name__}", given)
        keys.append((key, kind))
    return _struct("_Options", keys), tables


if TYPE_CHECKING:
    _Options = msgspec.Struct
    _TABLES: dict[str, type[msgspec.Struct]]
else:
    _Options, _TABLES = _options_structs()


class _Tuning(_Strict):
    """:class:`convlab.systems.system.Tuning`, each key optional and bounded."""

    weights: Annotated[list[_Weight], Meta(min_length=1, max_length=MAX_VALUES)] | UnsetType = UNSET
    params: (
        dict[_Short, Annotated[list[_Param], Meta(min_length=1, max_length=MAX_VALUES)]] | UnsetType
    ) = UNSET
    samples: _Count | UnsetType = UNSET
    metric: _Short | UnsetType = UNSET
    folds: Annotated[int, Meta(ge=2, le=MAX_FOLDS)] | UnsetType = UNSET
    seed: Annotated[int, Meta(ge=0, le=2**32 - 1)] | UnsetType = UNSET


class _System(_Strict):
    """One ``[[systems]]`` table: the keys of :meth:`System.as_dict`."""

    name: _Name
    strategy: _Short | UnsetType = UNSET
    retrieval: Literal["dense", "lexical", "bm25", "hybrid"] | UnsetType = UNSET
    options: _Options | UnsetType = UNSET
    views: Annotated[list[_Short], Meta(min_length=1, max_length=MAX_VIEWS)] | UnsetType = UNSET
    fusion: _Short | UnsetType = UNSET
    fusion_params: dict[_Short, _Param] | UnsetType = UNSET
    weights: Annotated[list[_Weight], Meta(min_length=1, max_length=MAX_VIEWS)] | UnsetType = UNSET
    tuning: _Tuning | UnsetType = UNSET
    resurrection: _Short | UnsetType = UNSET
    text: _Short | UnsetType = UNSET
    keys: _Keys | UnsetType = UNSET


class _File(_Strict):
    """An experiment file."""

    strategies: Annotated[list[_Short], Meta(max_length=MAX_VIEWS)] = msgspec.field(
        default_factory=list
    )
    defaults: bool = False
    systems: Annotated[list[_System], Meta(max_length=MAX_SYSTEMS)] = msgspec.field(
        default_factory=list
    )


@dataclass(frozen=True, slots=True)
class Experiment:
    """An experiment file, checked: whether it includes the default systems, and its own.

    ``strategies`` are those of the default systems (empty: the caller's choice).
    """

    defaults: bool
    systems: list[System]
    strategies: tuple[str, ...] = ()


def parse_experiment(doc: Mapping[str, Any], path: object) -> Experiment:
    """The experiment of a parsed TOML document ``doc`` read from ``path``.

    Raises:
        ValueError: ``path: KEY: reason`` for the first value the schema or a registry refuses,
            or a name given twice in the file.
    """
    from convlab.strategies import STRATEGIES

    try:
        spec = msgspec.convert(doc, _File, strict=True)
    except msgspec.ValidationError as exc:
        raise ValueError(_schema_error(path, doc, exc)) from None
    for i, strategy in enumerate(spec.strategies):
        if strategy not in STRATEGIES:
            raise ValueError(
                f"{escaped(path)}: strategies[{i}]: unknown strategy {shown(strategy)}; valid: "
                f"{', '.join(STRATEGIES.names())}"
            )
    if len(set(spec.strategies)) != len(spec.strategies):
        raise ValueError(f"{escaped(path)}: strategies: a strategy is named twice")
    systems = []
    for i, record in enumerate(spec.systems):
        where = f"{escaped(path)}: systems[{i}] ({shown(record.name)})"
        try:
            systems.append(_system(record))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {escaped(exc)}") from None
    seen: dict[str, int] = {}
    for i, s in enumerate(systems):
        if s.name in seen:
            raise ValueError(
                f"{escaped(path)}: systems[{i}].name: {shown(s.name)} is the name of "
                f"systems[{seen[s.name]}] too; names must be unique"
            )
        seen[s.name] = i
    return Experiment(spec.defaults, systems, tuple(spec.strategies))


def _given(struct: msgspec.Struct) -> dict[str, Any]:
    """The keys of ``struct`` that the file gave."""
    return {k: v for k, v in msgspec.structs.asdict(struct).items() if v is not UNSET}


def _system(record: _System) -> System:
    """A :class:`System` from a checked table, its names checked against the registries."""
    from convlab.retrieval import SearchOptions
    from convlab.strategies import STRATEGIES

    check_name(record.name)
    fields = _given(record)
    strategies = [View.parse(v).strategy for v in fields.get("views", ())]
    strategies += [fields["strategy"]] if "strategy" in fields else []
    for strategy in strategies:
        STRATEGIES.get(strategy)  # an unknown strategy: the error lists the valid ones
    if "options" in fields:
        options = _given(record.options)  # type: ignore[arg-type]
        for key in _TABLES:  # plain data, as the flat options take it
            if key in options:
                options[key] = _given(options[key])
        fields["options"] = SearchOptions.from_dict(options)
    for key in ("views", "weights"):
        if key in fields:
            fields[key] = tuple(fields[key])
    weights = fields.get("weights")
    if weights is not None and not any(weights):
        raise ValueError("weights: every weight is 0; at least one view must count")
    fusion = fields.get("fusion", "convex")
    _check_params(fusion, fields.get("fusion_params", {}), "fusion_params")
    if "tuning" in fields:
        tuning = _given(record.tuning)  # type: ignore[arg-type]
        _check_params(fusion, tuning.get("params", {}), "tuning.params")
        fields["tuning"] = Tuning(**tuning)
    if "keys" in fields:
        fields["keys"] = _given(record.keys)  # type: ignore[arg-type]
    system = System(**fields)
    if system.tuning is not None:
        size = len(system.tuning.weights) ** (len(system.views) - 1)
        for values in system.tuning.params.values():
            size *= len(values)
        if size > MAX_SETTINGS:
            raise ValueError(
                f"tuning: the grid has {size:,} settings; at most {MAX_SETTINGS:,} "
                "(fewer weights, values or views)"
            )
    return system


def _check_params(fusion: str, params: Mapping[str, Any], key: str) -> None:
    """Refuse a parameter the fusion method does not take, or a value it cannot use."""
    from convlab.fusion import FUSIONS, NORMS

    method = FUSIONS.get(fusion)
    known = [
        p.name
        for p in inspect.signature(method).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    for name, value in params.items():
        if name not in known:
            valid = ", ".join(known) or "none"
            raise ValueError(f"{key}.{escaped(name)}: {fusion} takes no such parameter; {valid}")
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            if name == "norm" and v not in NORMS:
                raise ValueError(f"{key}.norm: {shown(v)} is not one of {', '.join(NORMS)}")
            if name != "norm" and not (isinstance(v, int | float) and math.isfinite(v)):
                raise ValueError(f"{key}.{name}: {shown(v)} is not a finite number")


_AT = re.compile(r"^(?P<reason>.*?)(?: - at `\$(?P<key>[^`]*)`)?$", re.DOTALL)


_STRUCTS: dict[str, type[msgspec.Struct]] = {
    "": _File,
    "systems[]": _System,
    "systems[].tuning": _Tuning,
    "systems[].options": _Options,
    "systems[].keys": _Keys,
    **{f"systems[].options.{key}": struct for key, struct in _TABLES.items()},
}


def _schema_error(path: object, doc: Mapping[str, Any], exc: msgspec.ValidationError) -> str:
    """``path: key (name): reason`` from msgspec's ``reason - at `$.key```."""
    m = _AT.match(str(exc))
    reason, key = (m["reason"], m["key"] or "") if m else (str(exc), "")
    key = key.lstrip(".")
    unknown = re.match(r"Object contains unknown field `(.*)`$", reason, re.DOTALL)
    if unknown:
        struct = _STRUCTS.get(re.sub(r"\[\d+\]", "[]", key), _File)
        valid = ", ".join(struct.__struct_fields__)
        reason = f"unknown key {shown(unknown[1])}; valid: {valid}"
    found = re.match(r"systems\[(\d+)\]", key)
    if found:
        records = doc.get("systems")
        i = int(found[1])
        record = records[i] if isinstance(records, list) and i < len(records) else None
        if isinstance(record, Mapping) and isinstance(record.get("name"), str):
            key = f"{key} ({shown(record['name'][:NAME_MAX])})"
    where = f"{escaped(path)}: {escaped(key)}" if key else escaped(path)
    return f"{where}: {escaped(reason)}"
