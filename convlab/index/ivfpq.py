"""The ``ivfpq`` index kind: FAISS IVF + PQ (optionally OPQ), exact re-scoring, bounded memory.

At 10M units the flat index (10M x 384 float32) is 15 GB. ``ivfpq`` keeps only PQ codes in RAM
(``m`` bytes plus an 8-byte id per unit with ``nbits=8``) and the vectors as float16 on disk,
read row by row with ``pread`` (:mod:`convlab.index.disk_rows`). A query probes ``nprobe`` of
the ``nlist`` inverted lists, takes the ``rescore * k`` best candidates by PQ distance and
re-scores them exactly (float16 vectors, float32 arithmetic), so the scores returned are cosines,
as with the other kinds.

The index is built in three passes over shards
(:meth:`convlab.index.vector.VectorIndex.build_from_shards`): count and check the rows, draw the
training sample, then add each shard and write its float16 vectors into the file on disk; at
most one shard of float32 vectors is held at a time.
The training sample depends only on the global row numbers and the seed (each row gets a
pseudo-random key; the ``train_size`` smallest keys win), so the same vectors cut into different
shards give the same index.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from convlab.index.disk_rows import DiskRows
from convlab.index.faisslib import FaissIndex, load_faiss

__all__ = [
    "IVFPQParams",
    "ShardLoader",
    "TrainSample",
    "make_ivfpq",
    "parquet_shards",
    "rescore_into",
]

ShardLoader = Callable[[], tuple[pl.DataFrame, np.ndarray]]
"""A zero-argument function returning one shard: its units (rows) and their vectors."""

_NORM_TOLERANCE = 1e-2


@dataclass(frozen=True, slots=True, kw_only=True)
class IVFPQParams:
    """Parameters of an ``ivfpq`` index; all are written to the manifest.

    Attributes:
        nlist: inverted lists (coarse centroids); None: ``4 sqrt(n)``, at most ``n // 39``.
        m: PQ sub-quantizers (bytes per code with ``nbits=8``); must divide the dimension.
        nbits: bits per sub-quantizer code (1-16).
        nprobe: lists probed per query.
        rescore: candidates re-scored exactly per query, as a multiple of ``k``.
        opq: learn an OPQ rotation before PQ (better codes, slower training).
        train_size: rows sampled to train; None: ``min(n, max(64 nlist, 256 * 2**nbits))``.
        seed: seed of the training sample.
    """

    nlist: int | None = None
    m: int = 48
    nbits: int = 8
    nprobe: int = 32
    rescore: int = 10
    opq: bool = False
    train_size: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("m", "nprobe", "rescore"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ivfpq {name} must be a positive integer, got {value!r}")
        for name in ("nlist", "train_size"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ValueError(f"ivfpq {name} must be a positive integer or None, got {value!r}")
        if isinstance(self.nbits, bool) or not isinstance(self.nbits, int):
            raise ValueError(f"ivfpq nbits must be an integer from 1 to 16, got {self.nbits!r}")
        if not 1 <= self.nbits <= 16:
            raise ValueError(f"ivfpq nbits must be from 1 to 16, got {self.nbits}")
        if not isinstance(self.opq, bool):
            raise ValueError(f"ivfpq opq must be True or False, got {self.opq!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"ivfpq seed must be a non-negative integer, got {self.seed!r}")

    @classmethod
    def from_dict(cls, params: dict[str, Any]) -> IVFPQParams:
        """Parameters from keyword arguments, refusing unknown names.

        Raises:
            ValueError: an unknown name (listing the valid ones) or a bad value.
        """
        valid = [f.name for f in fields(cls)]
        unknown = sorted(set(params) - set(valid))
        if unknown:
            raise ValueError(
                f"unknown ivfpq parameter(s) {', '.join(unknown)}; valid: {', '.join(valid)}"
            )
        return cls(**params)

    def resolved(self, n: int, d: int) -> IVFPQParams:
        """These parameters with ``nlist`` and ``train_size`` fixed for ``n`` units of ``d`` dims.

        Raises:
            ValueError: ``m`` does not divide ``d``, or too few units to train.
        """
        if d % self.m:
            raise ValueError(f"ivfpq m={self.m} must divide the dimension {d}")
        nlist = self.nlist or max(1, min(n // 39, int(4 * math.sqrt(max(n, 1)))))
        need = max(nlist, 2**self.nbits)
        train_size = self.train_size or min(n, max(64 * nlist, 256 * 2**self.nbits))
        train_size = min(train_size, n)
        if train_size < need:
            raise ValueError(
                f"ivfpq with nlist={nlist}, nbits={self.nbits} needs at least {need} units to "
                f"train; got {train_size} (use kind 'flat' or 'hnsw' for small indexes)"
            )
        out = asdict(self) | {"nlist": nlist, "train_size": train_size}
        return IVFPQParams(**out)


def make_ivfpq(d: int, params: IVFPQParams) -> FaissIndex:
    """An untrained FAISS index for resolved ``params``.

    L2 on unit vectors ranks exactly as cosine; candidates are re-scored by cosine anyway.
    """
    if params.nlist is None or params.train_size is None:
        raise ValueError("ivfpq parameters must be resolved (IVFPQParams.resolved) first")
    faiss = load_faiss()
    # FAISS's Python wrapper keeps the quantizer and the transform alive with the index
    ivf = faiss.IndexIVFPQ(faiss.IndexFlatL2(d), d, params.nlist, params.m, params.nbits)
    ivf.nprobe = params.nprobe
    if not params.opq:
        return ivf
    return faiss.IndexPreTransform(faiss.OPQMatrix(d, params.m), ivf)


def set_nprobe(index: FaissIndex, nprobe: int) -> None:
    """Set ``nprobe`` on an IVF index, wrapped in an OPQ transform or not."""
    load_faiss().extract_index_ivf(index).nprobe = nprobe


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


def check_shard(units: pl.DataFrame, vectors: np.ndarray, d: int | None, label: str) -> np.ndarray:
    """``vectors`` as float32 after checking shape, finiteness and unit norm.

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


def rescore_into(
    vectors: np.ndarray | DiskRows, query: np.ndarray, candidates: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosines of one query against its candidate rows, read in row order.

    Returns:
        ``(sims, rows)``: the distinct candidate rows (sorted, so the file is read forward)
        and their float32 cosines.
    """
    rows = np.unique(candidates[candidates >= 0])
    sims = np.asarray(vectors[rows], dtype=np.float32) @ query
    return sims, rows


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
