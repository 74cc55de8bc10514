"""The records the build recipe (:mod:`convlab.build`) is given and makes, its manifest typed.

:class:`Embedded` (units embedded before, kept by an incremental build), :class:`Given` (chunks,
turns or vectors a caller already made), :class:`Derived` (the frames made from a corpus) and
:class:`BuildManifest`, what made a :class:`convlab.build.BuiltIndex` (a msgspec struct:
``msgspec.to_builtins(manifest)`` is its JSON form).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec
import numpy as np
import polars as pl

__all__ = ["BuildCounts", "BuildManifest", "Derived", "Embedded", "Given", "with_kept"]


class Embedded(NamedTuple):
    """Units embedded before, kept by an incremental build: row i of ``units`` is ``vectors[i]``."""

    units: pl.DataFrame
    vectors: np.ndarray


class Derived(NamedTuple):
    """The frames :func:`derive` makes from a corpus: turns, chunks and the strategy's units."""

    turns: pl.DataFrame
    chunks: pl.DataFrame
    units: pl.DataFrame


class Given(NamedTuple):
    """What a caller already made for the new corpus, so :func:`build_index` does not make it.

    Attributes:
        chunks: the corpus's chunks, made with the unit's policy (several strategies over one
            corpus chunk it once).
        turns: the corpus's turns.
        vectors: the new units' vectors (an evaluation embeds the texts of several strategies
            in one pass); nothing is embedded then. Row i is unit i of :func:`derive` for the
            same corpus and unit spec.
    """

    chunks: pl.DataFrame | None = None
    turns: pl.DataFrame | None = None
    vectors: np.ndarray | None = None


class BuildCounts(msgspec.Struct, frozen=True, kw_only=True):
    """What a build holds: conversations of the new corpus, its chunks, units (kept included)."""

    conversations: int
    chunks: int
    units: int
    kept_units: int


class BuildManifest(msgspec.Struct, frozen=True, kw_only=True):
    """What made a :class:`BuiltIndex` (provenance; nothing reads it back to search).

    Attributes:
        embedding: the embedding cache's counts for the pass (requested, from_cache, embedded,
            ...); empty when the embedder is not cached or the vectors were given.
        engine: the engine's description; None when the pass ran in this process without one.
        dense: whether the units were embedded (else zero vectors).
        bm25: whether a BM25 index was built.
        seconds: ``derive``, ``embed`` and ``index`` times of the build (wall), and
            ``embed_cpu``, the embedding pass's CPU time in this process (:func:`build_indexes`).
    """

    convlab_version: str
    strategy: str
    max_tokens: int
    policy: dict[str, Any]
    model_id: str
    embedder: str | None
    dimension: int
    kind: str
    index_params: dict[str, Any]
    counts: BuildCounts
    engine: dict[str, Any] | None = None
    embedding: dict[str, int] = msgspec.field(default_factory=dict)
    dense: bool = True
    bm25: bool = False
    units_fingerprint: str = ""
    seconds: dict[str, float] = msgspec.field(default_factory=dict)


def with_kept(
    keep: Embedded | None, units: pl.DataFrame, vectors: np.ndarray, dimension: int
) -> tuple[pl.DataFrame, np.ndarray]:
    """The kept units and vectors followed by the new ones."""
    if keep is None:
        return units, np.asarray(vectors, dtype=np.float32)
    if keep.units.height != len(keep.vectors):
        raise ValueError(f"keep has {keep.units.height} units but {len(keep.vectors)} vectors")
    parts = [f for f in (keep.units, units) if f.height]
    all_units = pl.concat(parts) if parts else units
    kept = np.asarray(keep.vectors, dtype=np.float32).reshape(-1, dimension)
    all_vectors = np.vstack([kept, np.asarray(vectors, dtype=np.float32).reshape(-1, dimension)])
    if all_units["unit_id"].is_duplicated().any():
        raise RuntimeError("duplicate unit ids between the kept and the new units")
    return all_units, all_vectors
