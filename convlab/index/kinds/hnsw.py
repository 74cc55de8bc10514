"""``hnsw``: ``IndexHNSWFlat``, for sub-millisecond queries at 100k+ units.

Parameters: ``hnsw_m`` (32), ``ef_construction`` (200), ``ef_search`` (64 by default: FAISS's
efSearch 16 loses recall). Scores are FAISS's inner products of the normalised vectors.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from convlab.index.faisslib import FaissIndex, load_faiss
from convlab.index.kinds.base import StoredVectors, faiss_top, in_memory, register_kind
from convlab.index.shards import TrainSample

__all__ = ["HNSW"]


@register_kind("hnsw")
class HNSW:
    """A graph index; nothing trained, the vectors kept as float32 in memory."""

    vector_dtype = np.dtype(np.float32)
    unit_norm = False
    tunable = ()

    def resolve(self, params: Mapping[str, Any], n: int, d: int) -> dict[str, Any]:
        """The parameters as given (defaults apply when the index is made)."""
        return dict(params)

    def make(self, d: int, n: int, params: Mapping[str, Any]) -> FaissIndex:
        """An empty ``IndexHNSWFlat`` over inner products."""
        faiss = load_faiss()
        index = faiss.IndexHNSWFlat(d, int(params.get("hnsw_m", 32)), faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = int(params.get("ef_construction", 200))
        index.hnsw.efSearch = int(params.get("ef_search", 64))
        return index

    def sample(self, params: Mapping[str, Any], n: int) -> TrainSample | None:
        """None: HNSW learns nothing."""
        return None

    def open_vectors(self, path: Path) -> StoredVectors:
        """The float32 vectors, read into memory."""
        return in_memory(path)

    def tune(self, index: FaissIndex, params: Mapping[str, Any]) -> dict[str, Any]:
        """Nothing to set: ``efSearch`` is saved in the FAISS file."""
        return dict(params)

    def search(
        self,
        index: FaissIndex,
        vectors: StoredVectors,
        queries: np.ndarray,
        k: int,
        params: Mapping[str, Any],
    ) -> tuple[np.ndarray, np.ndarray]:
        """FAISS's graph search."""
        return faiss_top(index, queries, k)
