"""``flat``: exact inner product (``IndexFlatIP``); vectors are normalised, so scores are cosine.

A query over the whole index is one BLAS product over the kept float32 vectors plus a partial
sort: exact search is bound by memory bandwidth, and on this project's machines FAISS's
single-query flat path measured about 2x slower than that product (eval/bench_search.py records
both). The FAISS index is kept for saving and for tools that read FAISS files.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from convlab.index.faisslib import FaissIndex, load_faiss
from convlab.index.kinds.base import StoredVectors, faiss_top, in_memory, padded, register_kind
from convlab.index.shards import TrainSample
from convlab.index.topk import top_into

__all__ = ["Flat"]


@register_kind("flat")
class Flat:
    """Exact search; nothing trained, the vectors kept as float32 in memory."""

    vector_dtype = np.dtype(np.float32)
    unit_norm = False
    tunable = ()

    def resolve(self, params: Mapping[str, Any], n: int, d: int) -> dict[str, Any]:
        """The parameters as given (flat has none of its own)."""
        return dict(params)

    def make(self, d: int, n: int, params: Mapping[str, Any]) -> FaissIndex:
        """An empty ``IndexFlatIP``."""
        return load_faiss().IndexFlatIP(d)

    def sample(self, params: Mapping[str, Any], n: int) -> TrainSample | None:
        """None: flat learns nothing."""
        return None

    def open_vectors(self, path: Path) -> StoredVectors:
        """The float32 vectors, read into memory."""
        return in_memory(path)

    def tune(self, index: FaissIndex, params: Mapping[str, Any]) -> dict[str, Any]:
        """Nothing to set at search time."""
        return dict(params)

    def search(
        self,
        index: FaissIndex,
        vectors: StoredVectors,
        queries: np.ndarray,
        k: int,
        params: Mapping[str, Any],
    ) -> tuple[np.ndarray, np.ndarray]:
        """One product over every vector (matrix-vector for one query), then the top ``k``."""
        if not isinstance(vectors, np.ndarray):
            return faiss_top(index, queries, k)
        scores, ids = padded(queries.shape[0], k)
        if queries.shape[0] == 1:  # matrix-vector (gemv), as a plain numpy scan does
            top_into(vectors @ queries[0], k, None, scores[0], ids[0])
        else:
            for j, sims in enumerate(queries @ vectors.T):
                top_into(sims, k, None, scores[j], ids[j])
        return scores, ids
