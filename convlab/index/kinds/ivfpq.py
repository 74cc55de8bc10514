"""``ivfpq``: FAISS IVF + PQ (optionally OPQ), exact re-scoring, bounded memory.

At 10M units the flat index (10M x 384 float32) is 15 GB. ``ivfpq`` keeps only PQ codes in RAM
(``m`` bytes plus an 8-byte id per unit with ``nbits=8``) and the vectors as float16 on disk,
read row by row with ``pread`` (:mod:`convlab.index.disk_rows`). A query probes ``nprobe`` of
the ``nlist`` inverted lists, takes the ``rescore * k`` best candidates by PQ distance and
re-scores them exactly (float16 vectors, float32 arithmetic), so the scores returned are cosines,
as with the other kinds. ``nprobe`` and ``rescore`` are set at search time
(:meth:`convlab.index.vector.VectorIndex.set_search`).

Built from shards (:meth:`convlab.index.vector.VectorIndex.build_from_shards`), at most one
shard of float32 vectors is held at a time; the training sample is drawn as the shards come
(:class:`convlab.index.shards.TrainSample`), so the same vectors cut into different shards give
the same index.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from convlab.errors import UnfitIndex
from convlab.index.disk_rows import DiskRows
from convlab.index.faisslib import FaissIndex, load_faiss
from convlab.index.kinds.base import StoredVectors, default_nlist, padded, register_kind
from convlab.index.shards import TrainSample
from convlab.index.topk import top_into

__all__ = ["IVFPQ", "IVFPQParams", "make_ivfpq", "rescore_into"]


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
    def from_dict(cls, params: Mapping[str, Any]) -> IVFPQParams:
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
            raise UnfitIndex(f"ivfpq m={self.m} must divide the dimension {d}")
        nlist = self.nlist or default_nlist(n)
        need = max(nlist, 2**self.nbits)
        train_size = self.train_size or min(n, max(64 * nlist, 256 * 2**self.nbits))
        train_size = min(train_size, n)
        if train_size < need:
            raise UnfitIndex(
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


@register_kind("ivfpq")
class IVFPQ:
    """PQ codes in memory, float16 vectors on disk for the exact re-scoring of candidates."""

    vector_dtype = np.dtype(np.float16)
    unit_norm = True  # L2 on unit vectors ranks as cosine
    tunable = ("nprobe", "rescore")

    def resolve(self, params: Mapping[str, Any], n: int, d: int) -> dict[str, Any]:
        """:class:`IVFPQParams` with ``nlist`` and ``train_size`` fixed for ``n`` rows."""
        return asdict(IVFPQParams.from_dict(params).resolved(n, d))

    def make(self, d: int, n: int, params: Mapping[str, Any]) -> FaissIndex:
        """An untrained IVF-PQ index (see :func:`make_ivfpq`)."""
        return make_ivfpq(d, IVFPQParams.from_dict(params))

    def sample(self, params: Mapping[str, Any], n: int) -> TrainSample | None:
        """``train_size`` rows drawn by ``seed``."""
        return TrainSample(int(params["train_size"] or n), seed=int(params["seed"]))

    def open_vectors(self, path: Path) -> StoredVectors:
        """The float16 vectors, left on disk and read row by row.

        Not mapped: see :mod:`convlab.index.disk_rows`.
        """
        return DiskRows(path)

    def tune(self, index: FaissIndex, params: Mapping[str, Any]) -> dict[str, Any]:
        """Set ``nprobe`` on the index (``rescore`` is read at each search)."""
        checked = IVFPQParams.from_dict(params)
        set_nprobe(index, checked.nprobe)
        return asdict(checked)

    def search(
        self,
        index: FaissIndex,
        vectors: StoredVectors,
        queries: np.ndarray,
        k: int,
        params: Mapping[str, Any],
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``rescore * k`` best candidates by PQ distance, re-scored exactly."""
        scores, ids = padded(queries.shape[0], k)
        pool = min(k * int(params["rescore"]), vectors.shape[0])
        candidates = index.search(queries, pool)[1]
        for j in range(queries.shape[0]):
            sims, cand = rescore_into(vectors, queries[j], candidates[j])
            if cand.size:
                top_into(sims, k, cand, scores[j], ids[j])
        return scores, ids
