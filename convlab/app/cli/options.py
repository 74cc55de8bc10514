"""What the subcommands share: the store option, dates, embedders and engines by name.

Every choice offered on the command line is read from the registry that holds the parts
(strategies, index kinds, redaction modes, backends, engines, and :data:`EMBEDDERS` here), so the
help, the errors and the code name the same things.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from convlab.app.exits import UsageError
from convlab.registry import Registry

if TYPE_CHECKING:
    from convlab.engines import Engine
    from convlab.protocols import Embedder

__all__ = [
    "DEFAULT_STORE",
    "EMBEDDERS",
    "EmbedderChoice",
    "add_common",
    "add_store",
    "embedder_for_vectors",
    "engine",
    "make_embedder",
    "parse_date",
]

DEFAULT_STORE = Path("~/.convlab/store")


def add_store(sp: argparse.ArgumentParser) -> None:
    """``--store DIR`` (default ``~/.convlab/store``)."""
    sp.add_argument(
        "--store", type=Path, default=DEFAULT_STORE, help="store directory (%(default)s)"
    )


def add_common(p: argparse.ArgumentParser, *, top: bool) -> None:
    """``--quiet``, ``--verbose``, ``--debug``: accepted before or after the subcommand."""
    default: bool | str = False if top else argparse.SUPPRESS  # a subcommand keeps the top's
    p.add_argument("-q", "--quiet", action="store_true", default=default, help="no progress")
    p.add_argument(
        "-v", "--verbose", action="store_true", default=default, help="list every skipped file"
    )
    p.add_argument(
        "--debug", action="store_true", default=default, help="print tracebacks of internal errors"
    )


# --- embedders -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbedderChoice:
    """One ``--embedder`` choice: how to make it, and which recorded vectors it made.

    Attributes:
        make: the embedder for indexing, given the ``--backend`` name.
        for_vectors: the embedder for queries against vectors recorded with ``model_id``, given
            ``(model_id, backend or None)``.
        made: whether vectors recorded with this ``model_id`` (a store's manifest) are its own.
    """

    make: Callable[[str], Embedder]
    for_vectors: Callable[[str, str | None], Embedder]
    made: Callable[[str], bool]


EMBEDDERS: Registry[EmbedderChoice] = Registry("embedder")
"""The ``--embedder`` choices: ``minilm`` (the model) and ``hash`` (a fast fake, for tests)."""

_HASH_ID = re.compile(r"hash-(\d+)")


def _minilm(backend: str) -> Embedder:
    from convlab.embed import minilm_embedder

    return minilm_embedder(backend)


def _minilm_for(model_id: str, backend: str | None) -> Embedder:
    from convlab.embed import query_embedder

    return query_embedder(model_id, backend)


def _minilm_made(model_id: str) -> bool:
    from convlab.embed import backend_of

    try:
        backend_of(model_id)
    except ValueError:
        return False
    return True


def _hash(_backend: str) -> Embedder:
    from convlab.embed import HashEmbedder

    return HashEmbedder()


def _hash_for(model_id: str, _backend: str | None) -> Embedder:
    from convlab.embed import HashEmbedder

    found = _HASH_ID.fullmatch(model_id)
    return HashEmbedder(int(found.group(1))) if found else HashEmbedder()


EMBEDDERS.add("minilm", EmbedderChoice(make=_minilm, for_vectors=_minilm_for, made=_minilm_made))
EMBEDDERS.add(
    "hash",
    EmbedderChoice(
        make=_hash, for_vectors=_hash_for, made=lambda m: _HASH_ID.fullmatch(m) is not None
    ),
)


def make_embedder(name: str, backend: str = "torch") -> Embedder:
    """The embedder of ``--embedder NAME --backend BACKEND``, for indexing.

    Raises:
        UsageError: an unknown embedder, naming the valid ones.
    """
    try:
        choice = EMBEDDERS.get(name)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return choice.make(backend)


def embedder_for_vectors(model_id: str, name: str | None, backend: str | None) -> Embedder:
    """The embedder for queries against vectors recorded with ``model_id``.

    Args:
        model_id: the ``model_id`` of a store's manifest.
        name: ``--embedder`` when given; else the registered embedder that made ``model_id``.
        backend: ``--backend`` when given.

    Raises:
        UsageError: an unknown ``name``, or no registered embedder made ``model_id``.
    """
    if name is None:
        makers = [n for n, choice in EMBEDDERS.items() if choice.made(model_id)]
        if not makers:
            raise UsageError(
                f"the store's vectors were made by {model_id!r}, which no embedder here makes "
                f"({', '.join(EMBEDDERS.names())})"
            )
        name = makers[0]
    try:
        choice = EMBEDDERS.get(name)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return choice.for_vectors(model_id, backend)


def engine(name: str, address: str | None) -> Engine:
    """The embedding engine of ``--engine NAME [--address ADDR]``.

    Raises:
        UsageError: ``--address`` without ``--engine ray``, or the engine's extra is missing.
    """
    from convlab.engines import get_engine

    if address is not None and name != "ray":
        raise UsageError("--address joins a Ray cluster: use it with --engine ray")
    try:
        return get_engine(name, **({"address": address} if address else {}))
    except ImportError as exc:  # the extra is missing: one line naming it
        raise UsageError(str(exc)) from None


def parse_date(text: str | None, option: str, *, end: bool = False) -> datetime | None:
    """A date or ISO time as UTC; a bare date ends at its last microsecond when ``end``.

    Raises:
        UsageError: ``text`` is neither, naming ``option``.

    Example:
        >>> parse_date("2026-01-31", "--until", end=True).isoformat()
        '2026-01-31T23:59:59.999999+00:00'
    """
    if text is None:
        return None
    try:
        d = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"{option} expects a date like 2026-01-31 or a time like 2026-01-31T14:30, got {text!r}"
        ) from None
    try:
        date.fromisoformat(text.strip())
        bare = True
    except ValueError:
        bare = False
    if end and bare:
        d = d.replace(hour=23, minute=59, second=59, microsecond=999_999)
    return d.replace(tzinfo=UTC) if d.tzinfo is None else d.astimezone(UTC)
