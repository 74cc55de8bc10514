"""Vectors that come in shards: loaders, checks and the training sample drawn across them.

:meth:`convlab.index.vector.VectorIndex.build_from_shards` builds an index of any kind in three
passes over shards: count and check the rows, draw the training sample (kinds that train), then
add each shard and write the vectors the kind keeps into the file on disk; at most one shard of
float32 vectors is held at a time. :meth:`~convlab.index.vector.VectorIndex.build` draws its
training sample with the same :class:`TrainSample` from one shard, all the vectors.

The training sample depends only on the global row numbers and the seed (each row gets a
pseudo-random key; the ``size`` smallest keys win), so the same vectors cut into different shards
give the same index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import polars as pl

__all__ = ["ShardLoader", "TrainSample", "check_shard", "parquet_shards"]

ShardLoader = Callable[[], tuple[pl.DataFrame, np.ndarray]]
"""A zero-argument function returning one shard: its units (rows) and their vectors."""

_NORM_TOLERANCE = 1e-2


def _row_keys(start: int, count: int, seed: int) -> np.ndarray:
    """A pseudo-random uint64 key per global row (splitmix64 of row and seed)."""
    with np.errstate(over="ignore"):
        z = np.arange(start, start + count, dtype=np.uint64) + np.uint64(
            (seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) % 2**64
        )
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


class TrainSample:
    """The ``size`` rows with the smallest keys, gathered shard by shard.

    Example:
        >>> s = TrainSample(2, seed=0)
        >>> s.add(np.eye(3, dtype=np.float32)); s.add(np.eye(3, dtype=np.float32))
        >>> s.vectors().shape
        (2, 3)
    """

    def __init__(self, size: int, *, seed: int) -> None:
        self.size = size
        self.seed = seed
        self.offset = 0
        self._keys = np.zeros(0, dtype=np.uint64)
        self._rows = np.zeros(0, dtype=np.int64)
        self._vectors: np.ndarray | None = None

    def add(self, vectors: np.ndarray) -> None:
        """Offer the next shard's vectors (rows continue from the previous shard)."""
        n = vectors.shape[0]
        keys = np.concatenate([self._keys, _row_keys(self.offset, n, self.seed)])
        rows = np.concatenate([self._rows, np.arange(self.offset, self.offset + n)])
        old = self._vectors if self._vectors is not None else vectors[:0]
        keep = np.argsort(keys, kind="stable")[: self.size]
        from_old = keep[keep < old.shape[0]]
        from_new = keep[keep >= old.shape[0]] - old.shape[0]
        self._vectors = np.concatenate(
            [old[from_old], np.asarray(vectors[from_new], dtype=np.float32)]
        )
        self._keys = np.concatenate([keys[from_old], keys[from_new + old.shape[0]]])
        self._rows = np.concatenate([rows[from_old], rows[from_new + old.shape[0]]])
        self.offset += n

    def vectors(self) -> np.ndarray:
        """The sample, in global row order."""
        if self._vectors is None:
            return np.zeros((0, 0), dtype=np.float32)
        return np.ascontiguousarray(self._vectors[np.argsort(self._rows)], dtype=np.float32)


def check_shard(
    units: pl.DataFrame, vectors: np.ndarray, d: int | None, label: str, *, unit_norm: bool = True
) -> np.ndarray:
    """``vectors`` as float32 after checking shape and (``unit_norm``) finiteness and unit norm.

    Raises:
        ValueError: naming ``label`` and the first bad row.
    """
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != units.height:
        raise ValueError(
            f"{label}: {units.height} units but vectors of shape {vectors.shape}; they must match"
        )
    if d is not None and vectors.shape[1] != d:
        raise ValueError(f"{label}: vectors have {vectors.shape[1]} dimensions, expected {d}")
    if not unit_norm:
        return vectors
    # row norms without an n x d temporary; a NaN or infinity anywhere in a row reaches its norm
    norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
    bad = ~np.isfinite(norms)
    if bad.any():
        raise ValueError(f"{label}: row {int(np.argmax(bad))} has a NaN or infinite value")
    off = np.abs(norms - 1.0) > _NORM_TOLERANCE
    if off.any():
        row = int(np.argmax(off))
        raise ValueError(
            f"{label}: row {row} has norm {norms[row]:.4f}; vectors must be normalised"
        )
    return vectors


def parquet_shards(
    paths: Sequence[str | Path], *, vector_column: str = "vector"
) -> list[ShardLoader]:
    """Shard loaders for Parquet files of units plus a fixed-size list ``vector`` column.

    Each file holds at least ``unit_id`` and ``vector`` (what the embedding engines write); the
    other columns are kept as the units.

    Raises:
        ValueError: (when a loader runs) a file lacks the columns or has a null vector, naming
            the file and row.
    """

    def loader(path: Path) -> ShardLoader:
        def load() -> tuple[pl.DataFrame, np.ndarray]:
            frame = pl.read_parquet(path, glob=False)
            missing = [c for c in ("unit_id", vector_column) if c not in frame.columns]
            if missing:
                raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
            col = frame[vector_column]
            if col.null_count():
                row = int(col.is_null().arg_max() or 0)
                raise ValueError(f"{path}: row {row} has no vector")
            lengths = col.list.len()
            if lengths.n_unique() > 1:
                row = int((lengths != lengths[0]).arg_max() or 0)
                raise ValueError(
                    f"{path}: row {row} has {lengths[row]} dimensions, row 0 {lengths[0]}"
                )
            d = int(lengths[0]) if len(lengths) else 0
            flat = col.explode().to_numpy().astype(np.float32, copy=False)
            return frame.drop(vector_column), flat.reshape(frame.height, d)

        return load

    return [loader(Path(p)) for p in paths]
