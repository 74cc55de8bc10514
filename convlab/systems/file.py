"""Experiment files: the systems an evaluation compares, as TOML (``eval.run --systems FILE``).

One ``[[systems]]`` table per system, with the keys of
:meth:`convlab.systems.system.System.as_dict`; ``defaults = true`` at the top puts the default
systems of the run's strategies first (:func:`convlab.systems.system.default_systems`): those of
``--strategies``, else the file's ``strategies = [...]``, else those of the default experiment,
:data:`DEFAULT_EXPERIMENT` (package data: what ``eval.run`` compares without ``--systems``)::

    defaults = true

    [[systems]]
    name = "fusion:bm25+seq"
    views = ["bm25:message", "bm25:sequential", "sequential"]
    fusion = "convex"
    fusion_params = { norm = "z-score" }
    weights = [1.0, 1.0, 0.5]
    resurrection = "window"

    [[systems]]
    name = "fusion:tuned"
    views = ["bm25:message", "sequential"]
    tuning = { weights = [0.0, 0.5, 1.0], samples = 8 }

A run folder's ``systems.chosen.toml`` (:func:`transfer_systems`) holds its cross-validated
systems with the weights chosen on all of its queries, fixed, beside the baseline and the
systems they fuse: run it on other data to judge the settings on queries nobody tuned on::

    python -m eval.run --data OTHER --systems RUN/systems.chosen.toml --baseline bm25:message
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from convlab.atomic import write_text_atomic
from convlab.files import CONFIG, read_text_regular
from convlab.systems.experiment import Experiment, parse_experiment
from convlab.systems.names import escaped, shown
from convlab.systems.system import System, default_systems

__all__ = [
    "DEFAULT_EXPERIMENT",
    "chosen_systems",
    "default_strategies",
    "read_experiment",
    "read_systems",
    "transfer_systems",
    "write_systems",
]

DEFAULT_EXPERIMENT = Path(__file__).with_name("experiment.toml")
"""The default experiment: the default systems of its ``strategies`` (``eval.run`` without
``--systems``)."""


@cache
def default_strategies() -> tuple[str, ...]:
    """The strategies of :data:`DEFAULT_EXPERIMENT`, in order."""
    return read_experiment(DEFAULT_EXPERIMENT).strategies


def read_systems(path: str | Path, *, strategies: Sequence[str] = ()) -> list[System]:
    """The systems of an experiment file, checked (:mod:`convlab.systems.experiment`).

    Args:
        path: a TOML file (``strategies``, ``defaults`` and ``[[systems]]``).
        strategies: the strategies of the default systems, when the file asks for them
            (default: the file's ``strategies``, else :func:`default_strategies`).

    Raises:
        ValueError: one line naming the file, the key and the reason: TOML that is not valid
            (or nested too deep), an unknown key, a value of the wrong type or out of bounds, a
            system that is not valid, a name given twice, or a file without any system.
    """
    path = Path(path)
    experiment = read_experiment(path)
    if experiment.defaults:
        strategies = tuple(strategies) or experiment.strategies or default_strategies()
    systems = default_systems(strategies) if experiment.defaults else []
    defaults = {s.name for s in systems}
    for i, s in enumerate(experiment.systems):
        if s.name in defaults:
            raise ValueError(
                f"{escaped(path)}: systems[{i}].name: {shown(s.name)} is the name of a default "
                "system (defaults = true); names must be unique"
            )
    systems += experiment.systems
    if not systems:
        raise ValueError(f"{escaped(path)}: no systems (add [[systems]] tables or defaults = true)")
    return systems


def read_experiment(path: str | Path) -> Experiment:
    """An experiment file, parsed and checked (the default systems not made yet).

    Raises:
        ValueError: as :func:`read_systems`, but for a file without systems.
    """
    path = Path(path)
    try:
        doc = _parse_toml(read_text_regular(path, limit=CONFIG))
    except tomllib.TOMLDecodeError as exc:  # its message names the line and column
        raise ValueError(f"{escaped(path)}: not valid TOML: {escaped(exc)}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{escaped(path)}: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise ValueError(f"{escaped(path)}: not valid TOML: nested too deep") from None
    except _TooDeep as exc:
        raise ValueError(f"{escaped(path)}: not valid TOML: nested too deep: {exc}") from None
    return parse_experiment(doc, path)


MAX_KEY_DOTS = 64
"""The most dots in one TOML key (``a.b.c``); Python's parser takes time quadratic in them."""

# what a dotted key cannot span: strings and comments (skipped whole), and separators
_TOKENS = re.compile(
    r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*|[.=\n,{}\[\]]',
    re.DOTALL,
)


def _parse_toml(text: str) -> dict[str, Any]:
    """``text`` parsed, after refusing keys dotted deeper than :data:`MAX_KEY_DOTS`.

    Raises:
        tomllib.TOMLDecodeError: not valid TOML.
        RecursionError: arrays or tables nested deeper than the parser can go.
        ValueError: a key with too many dots.
    """
    dots = 0
    for token in _TOKENS.finditer(text):
        if token[0] == ".":
            dots += 1
            if dots > MAX_KEY_DOTS:
                line = text.count("\n", 0, token.start()) + 1
                raise _TooDeep(f"line {line}: a key dotted more than {MAX_KEY_DOTS} times")
        elif len(token[0]) == 1 and token[0] in "=\n,{}[]":
            dots = 0
    return tomllib.loads(text)


class _TooDeep(ValueError):
    """A TOML document nested too deep to parse."""


def write_systems(systems: Sequence[System], path: str | Path) -> None:
    """Write ``systems`` as an experiment file (whole or not at all) that reads back equal."""
    import tomli_w

    records = [_plain(s.as_dict()) for s in systems]
    write_text_atomic(path, tomli_w.dumps({"systems": records}))


def chosen_systems(
    systems: Sequence[System], tuned: Mapping[str, Mapping[str, Any]]
) -> list[System]:
    """The cross-validated systems with the settings chosen on all queries, fixed (no tuning).

    Args:
        systems: the evaluated systems.
        tuned: per tuned system's name, its choice (``weights``, ``params``): the ``tuned``
            section of a run's ``config.json``.
    """
    out = []
    for s in systems:
        if s.name not in tuned or s.tuning is None:
            continue
        choice = tuned[s.name]
        out.append(
            replace(
                s,
                tuning=None,
                weights=tuple(choice["weights"]),
                fusion_params={**s.fusion_params, **choice.get("params", {})},
            )
        )
    return out


def transfer_systems(
    systems: Sequence[System], tuned: Mapping[str, Mapping[str, Any]], baseline: str
) -> list[System]:
    """What ``systems.chosen.toml`` holds: the baseline, the parts and the chosen fusions.

    The baseline, every one-view system that is a view of a tuned system (so that the parts
    are compared on the new data too), then the tuned systems with their choice fixed
    (:func:`chosen_systems`); in the order of ``systems``. Empty when nothing was tuned.
    """
    chosen = {s.name: s for s in chosen_systems(systems, tuned)}
    if not chosen:
        return []
    parts = {v.name for s in chosen.values() for v in s.views}
    keep = [
        chosen.get(s.name, s)
        for s in systems
        if s.name in chosen or s.name == baseline or (not s.fused and s.name in parts)
    ]
    return keep


def _plain(value: Any) -> Any:
    """TOML has no null: drop ``None`` values (and empty tables), recursively."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if v is not None and v != {}}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
