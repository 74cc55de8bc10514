"""The systems people search with: the shipped default, and a system named on the command line.

A *system* (:class:`convlab.systems.system.System`) is what ``eval.run`` evaluates: views
(a strategy's units searched densely or by BM25), a fusion of their doc rankings with fixed
weights, rankers and filters. ``convlab index --system``, ``convlab search --system``, the search
panel and :meth:`convlab.store.Store.search` take the same records, so what is measured is what
is searched.

The default system is ``default.toml`` beside this module (package data): the fusion chosen by
cross-validation on LoCoMo, its weights fixed (the file names the command that chose them).

Example:
    >>> default_system().name
    'fusion:convex'
    >>> resolve_system("bm25:message").views
    (View(strategy='message', retrieval=<Retrieval.LEXICAL: 'lexical'>, bm25=None, embedder=None),)
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from convlab.defaults import SYSTEM_FILE
from convlab.systems.system import System, Tuning, View, default_systems

__all__ = [
    "System",
    "Tuning",
    "View",
    "default_system",
    "default_systems",
    "resolve_system",
]


@cache
def default_system() -> System:
    """The default system: the one system of :data:`convlab.defaults.SYSTEM_FILE`."""
    from convlab.systems.file import read_systems

    (system,) = read_systems(SYSTEM_FILE)
    return system


def resolve_system(spec: str | Path | System | None) -> System:
    """The system ``spec`` names.

    Args:
        spec: ``None`` or ``"default"`` (:func:`default_system`); a :class:`System`; the name of
            the default system (``fusion:convex``); an experiment file (``.toml``) holding one
            system, or ``FILE#NAME`` for one of several; or a view name, searched alone
            (``turn_pair``, ``bm25:message``, ``hybrid:sequential``).

    Raises:
        ValueError: an unreadable or invalid file, a name the file does not hold, or a view
            of an unknown strategy or prefix (each naming the valid choices).
    """
    from convlab.strategies import STRATEGIES

    if isinstance(spec, System):
        return spec
    text = "default" if spec is None else str(spec).strip()
    if text in ("default", default_system().name):
        return default_system()
    path, _, name = text.partition("#")
    if path.endswith(".toml") or Path(path).is_file():
        return _from_file(Path(path).expanduser(), name)
    view = View.parse(text)
    if view.strategy not in STRATEGIES:
        raise ValueError(
            f"system {text!r}: not a file, not 'default' and not a view of a strategy "
            f"({', '.join(sorted(STRATEGIES))}; prefixes bm25:, hybrid:, static:)"
        )
    return System(name=view.name, views=(view,))


def _from_file(path: Path, name: str) -> System:
    from convlab.systems.file import read_systems

    try:
        systems = read_systems(path)
    except OSError as exc:
        raise ValueError(f"cannot read the system file {path}: {exc.strerror}") from exc
    names = [s.name for s in systems]
    if name:
        if name not in names:
            raise ValueError(f"{path} has no system {name!r}; it has {', '.join(names)}")
        return systems[names.index(name)]
    if len(systems) > 1:
        raise ValueError(
            f"{path} holds {len(systems)} systems ({', '.join(names)}): name one as {path}#NAME"
        )
    return systems[0]
