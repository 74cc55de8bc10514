"""``ivf``: ``IndexIVFFlat`` over inner products, trained on every vector.

Parameters: ``nlist`` (None: ``4 sqrt(n)``, at most ``n // 39``) and ``nprobe`` (16 by default:
nprobe 1 is poor).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from convlab.index.faisslib import FaissIndex, load_faiss
from convlab.index.kinds.base import (
    StoredVectors,
    default_nlist,
    faiss_top,
    in_memory,
    register_kind,
)
from convlab.index.shards import TrainSample

__all__ = ["IVF"]


@register_kind("ivf")
class IVF:
    """Inverted lists of full vectors; the coarse centroids learnt from all rows."""

    vector_dtype = np.dtype(np.float32)
    unit_norm = False
    tunable = ()

    def resolve(self, params: Mapping[str, Any], n: int, d: int) -> dict[str, Any]:
        """The parameters as given (defaults apply when the index is made)."""
        return dict(params)

    def make(self, d: int, n: int, params: Mapping[str, Any]) -> FaissIndex:
        """An untrained ``IndexIVFFlat``."""
        faiss = load_faiss()
        nlist = int(params.get("nlist") or default_nlist(n))
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
        index.nprobe = int(params.get("nprobe", 16))
        return index

    def sample(self, params: Mapping[str, Any], n: int) -> TrainSample | None:
        """Every row."""
        return TrainSample(n, seed=0)

    def open_vectors(self, path: Path) -> StoredVectors:
        """The float32 vectors, read into memory."""
        return in_memory(path)

    def tune(self, index: FaissIndex, params: Mapping[str, Any]) -> dict[str, Any]:
        """Nothing to set: ``nprobe`` is saved in the FAISS file."""
        return dict(params)

    def search(
        self,
        index: FaissIndex,
        vectors: StoredVectors,
        queries: np.ndarray,
        k: int,
        params: Mapping[str, Any],
    ) -> tuple[np.ndarray, np.ndarray]:
        """FAISS's search of ``nprobe`` lists."""
        return faiss_top(index, queries, k)
