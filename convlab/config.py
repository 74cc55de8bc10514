"""Typed configs: frozen dataclasses whose fields declare their own types and bounds.

A config (a ranker's parameters, RM3 feedback, BM25's k1 and b, ...) is a frozen dataclass
whose number fields are ``Annotated[int, msgspec.Meta(ge=..., le=...)]`` (or ``float``): the
bounds are written once, on the field, and read from there both by the config's own
``__post_init__`` (:func:`check`) and by the schema of an experiment file
(:mod:`convlab.systems.experiment` builds its msgspec structs from :func:`fields`). A field's
``metadata`` may give ``flat`` (its key in the flat search options, when not its name),
``label`` (how :func:`check`'s messages name it, when not ``CONFIG.FIELD``),
``file`` (the type an experiment file takes, when not the field's own: a name where the config
holds an Enum) and ``in_file`` (False: no key of an experiment file).

How a config is written in the flat search options (an experiment file's ``options`` table,
:meth:`convlab.retrieval.SearchOptions.from_dict`) is its class's ``FORM``, under its ``KEY``:

- ``table``: ``KEY = {field = value, ...}`` (``prf = {fb_docs = 3}``); absent: off;
- ``value``: ``KEY = value`` of its one field (``mmr = 0.7``); absent: off;
- ``switch``: ``KEY = true`` turns it on, each field under its own flat key
  (``recency = true, recency_days = 7``).

Example:
    >>> from convlab.retrieval.rankers import SessionCap  # cap: Annotated[int, Meta(ge=1, ...)]
    >>> SessionCap(0)
    Traceback (most recent call last):
    ...
    ValueError: session_cap.cap must be an integer in [1, 10000], not 0
    >>> flat(SessionCap(3)), from_flat(SessionCap, {"session_cap": 4})
    ({'session_cap': 3}, SessionCap(cap=4))
"""

from __future__ import annotations

import dataclasses
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

import msgspec

__all__ = ["FORMS", "Field", "check", "fields", "flat", "flat_keys", "from_flat", "is_config"]

FORMS = ("table", "value", "switch")
"""How a config is written in the flat search options (see the module)."""


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a config dataclass, as :func:`fields` reads it.

    Attributes:
        name: the attribute.
        flat: its key in the flat options (``metadata["flat"]``, else the name).
        hint: its annotation, ``Annotated`` bounds included.
        file: the type an experiment file takes: ``metadata["file"]``, else ``hint`` without
            ``None`` (TOML has no null; leaving a key out is "off").
        default: its default.
        in_file: whether an experiment file may give it.
        label: how :func:`check` names it (empty: ``CONFIG.FIELD``).
    """

    name: str
    flat: str
    hint: Any
    file: Any
    default: Any
    in_file: bool
    label: str = ""


def fields(cls: Any) -> tuple[Field, ...]:
    """The fields of the config dataclass ``cls``, in order, their annotations resolved."""
    if cls not in _FIELDS:
        _FIELDS[cls] = _read_fields(cls)
    return _FIELDS[cls]


_FIELDS: dict[type, tuple[Field, ...]] = {}
"""Each config class's fields, read once."""


def _read_fields(cls: Any) -> tuple[Field, ...]:
    module = sys.modules[cls.__module__]
    hints = get_type_hints(cls, vars(module), include_extras=True)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        default = (
            f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[operator]
        )
        file = f.metadata.get("file", _without_none(hint))
        flat = f.metadata.get("flat", f.name)
        in_file = f.metadata.get("in_file", True)
        label = f.metadata.get("label", "")
        out.append(Field(f.name, flat, hint, file, default, in_file, label))
    return tuple(out)


def is_config(cls: object) -> bool:
    """Whether ``cls`` is a config class with a flat form (a ``KEY`` and a ``FORM``)."""
    return isinstance(cls, type) and getattr(cls, "FORM", None) in FORMS and hasattr(cls, "KEY")


def check(config: object, label: str) -> None:
    """Refuse a number field of ``config`` outside its declared bounds; make float fields floats.

    Args:
        config: a config dataclass (frozen: floats are set with ``object.__setattr__``).
        label: how messages name it (``prf``: ``prf.fb_docs must be ...``).

    Raises:
        ValueError: ``LABEL.FIELD must be an integer in [1, 1000], not 0`` (or a number, at
            least, above, ...).
    """
    for f in fields(type(config)):
        value = getattr(config, f.name)
        base, meta = _number(f.hint)
        if base is None or (value is None and _optional(f.hint)):
            continue
        wrong_type = isinstance(value, bool) or not isinstance(
            value, int if base is int else (int, float)
        )
        if wrong_type or not _inside(value, meta):
            kind = "an integer" if base is int else "a number"
            named = f.label or f"{label}.{f.name}"
            raise ValueError(f"{named} must be {kind}{_range(meta)}, not {value!r}")
        if base is float:
            object.__setattr__(config, f.name, float(value))


def flat(config: Any, cls: type | None = None) -> dict[str, Any]:
    """The flat options of ``config`` (None: ``cls`` off): its keys and values (see the module)."""
    cls = type(config) if cls is None else cls
    form: str = cls.FORM  # type: ignore[attr-defined]
    key: str = cls.KEY  # type: ignore[attr-defined]
    if form == "switch":
        out: dict[str, Any] = {key: config is not None}
        for f in fields(cls):
            out[f.flat] = f.default if config is None else getattr(config, f.name)
        return out
    if config is None:
        return {key: None}
    if form == "value":
        return {key: getattr(config, fields(cls)[0].name)}
    return {key: {f.name: getattr(config, f.name) for f in fields(cls)}}


def flat_keys(cls: type) -> tuple[str, ...]:
    """The flat keys of the config class ``cls``: its ``KEY``, and its fields' for a switch."""
    if cls.FORM == "switch":  # type: ignore[attr-defined]
        return (cls.KEY, *(f.flat for f in fields(cls)))  # type: ignore[attr-defined]
    return (cls.KEY,)  # type: ignore[attr-defined]


def from_flat(cls: type, options: Mapping[str, Any]) -> Any:
    """The config of class ``cls`` that the flat ``options`` give (None: off).

    A ``table`` takes its config or its plain data (a mapping of its fields).

    Raises:
        ValueError: an unknown key of a table (``prf: unknown key(s) docs; valid: ...``), or a
            value out of its range.
    """
    form: str = cls.FORM  # type: ignore[attr-defined]
    key: str = cls.KEY  # type: ignore[attr-defined]
    value = options.get(key)
    if form == "switch":
        if not value:
            return None
        return cls(**{f.name: options[f.flat] for f in fields(cls) if f.flat in options})
    if value is None or isinstance(value, cls):
        return value
    if form == "value":
        return cls(**{fields(cls)[0].name: value})
    names = [f.name for f in fields(cls)]
    unknown = sorted(set(value) - set(names))
    if unknown:
        raise ValueError(f"{key}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(names)}")
    return cls(**value)


def _without_none(hint: Any) -> Any:
    """``hint`` less ``None`` (``X | None`` is ``X``)."""
    if get_origin(hint) in (Union, types.UnionType):
        kept = [a for a in get_args(hint) if a is not type(None)]
        return kept[0] if len(kept) == 1 else Union[tuple(kept)]  # noqa: UP007
    return hint


def _optional(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint)


def _number(hint: Any) -> tuple[type | None, msgspec.Meta | None]:
    """``(int or float, its Meta)`` of a number annotation (``(None, None)``: no number)."""
    hint = _without_none(hint)
    meta = None
    if get_origin(hint) is Annotated:
        hint, *extras = get_args(hint)
        meta = next((m for m in extras if isinstance(m, msgspec.Meta)), None)
    return (hint, meta) if hint in (int, float) else (None, None)


def _inside(value: float, meta: msgspec.Meta | None) -> bool:
    if meta is None:
        return True
    return not (
        (meta.ge is not None and value < meta.ge)
        or (meta.gt is not None and value <= meta.gt)
        or (meta.le is not None and value > meta.le)
        or (meta.lt is not None and value >= meta.lt)
    )


def _range(meta: msgspec.Meta | None) -> str:
    """`` in [0, 1]``, `` at least 1``, `` in (0, 1000000]``, ... (empty: no bounds)."""
    if meta is None:
        return ""
    low = meta.ge if meta.ge is not None else meta.gt
    high = meta.le if meta.le is not None else meta.lt
    if low is not None and high is not None:
        left = "[" if meta.ge is not None else "("
        right = "]" if meta.le is not None else ")"
        return f" in {left}{low:g}, {high:g}{right}"
    if low is not None:
        return f" at least {low:g}" if meta.ge is not None else f" above {low:g}"
    if high is not None:
        return f" at most {high:g}" if meta.le is not None else f" below {high:g}"
    return ""
