"""The index-kind contract (:class:`IndexKind`), its registry (:data:`INDEX_KINDS`) and helpers.

A kind is one module of :mod:`convlab.index.kinds`, one class registered with
``@register_kind("name")``: it knows how its FAISS index is made (untrained, empty), what it
trains on, what it keeps of the vectors and how it reads them back, which parameters are
set at search time, and how it answers a query over the whole index.
:class:`convlab.index.vector.VectorIndex` runs the same steps for every kind and never names
one; a search restricted to some rows is exact over them with numpy, whatever the kind.

FAISS is the ``convlab-memory[index]`` extra, imported when a kind makes an index
(:func:`convlab.index.faisslib.load_faiss`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from convlab.index.disk_rows import DiskRows
from convlab.index.faisslib import FaissIndex
from convlab.index.shards import TrainSample
from convlab.registry import Registry

__all__ = [
    "INDEX_KINDS",
    "IndexKind",
    "StoredVectors",
    "default_nlist",
    "faiss_top",
    "in_memory",
    "padded",
    "register_kind",
]

StoredVectors = np.ndarray | DiskRows
"""The vectors an index keeps: in memory, or on disk read row by row."""


class IndexKind(Protocol):
    """One FAISS index kind: how it builds, trains, keeps its vectors, loads and searches."""

    @property
    def vector_dtype(self) -> np.dtype:
        """The dtype of the vectors the index keeps (and writes to ``vectors.npy``)."""
        ...

    @property
    def unit_norm(self) -> bool:
        """Whether the vectors must be unit length, checked row by row when built."""
        ...

    @property
    def tunable(self) -> tuple[str, ...]:
        """The parameters :meth:`~convlab.index.vector.VectorIndex.set_search` may change."""
        ...

    def resolve(self, params: Mapping[str, Any], n: int, d: int) -> dict[str, Any]:
        """The parameters of an index of ``n`` vectors of ``d`` dims, as its manifest has them.

        Raises:
            ValueError: an unknown parameter or a bad value, or too few rows for the kind.
        """
        ...

    def make(self, d: int, n: int, params: Mapping[str, Any]) -> FaissIndex:
        """An untrained, empty FAISS index for :meth:`resolve`'s parameters."""
        ...

    def sample(self, params: Mapping[str, Any], n: int) -> TrainSample | None:
        """The rows the index trains on, drawn as the vectors come; None: it learns nothing."""
        ...

    def open_vectors(self, path: Path) -> StoredVectors:
        """The kept vectors of a saved index, from its ``vectors.npy``."""
        ...

    def tune(self, index: FaissIndex, params: Mapping[str, Any]) -> dict[str, Any]:
        """Set the search-time parameters of ``params`` on ``index``; the checked parameters.

        Raises:
            ValueError: a bad value.
        """
        ...

    def search(
        self,
        index: FaissIndex,
        vectors: StoredVectors,
        queries: np.ndarray,
        k: int,
        params: Mapping[str, Any],
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best rows of a non-empty index per query: ``(scores, rows)``, padded."""
        ...


INDEX_KINDS: Registry[IndexKind] = Registry("index kind")
"""Index kind name -> the kind (the ``--index`` choices)."""

K = TypeVar("K")


def register_kind(name: str) -> Callable[[type[K]], type[K]]:
    """Class decorator: register an instance of the class in :data:`INDEX_KINDS` as ``name``.

    Raises:
        ValueError: ``name`` is registered already.
    """

    def deco(cls: type[K]) -> type[K]:
        INDEX_KINDS.add(name, cls())  # type: ignore[arg-type]
        return cls

    return deco


def default_nlist(n: int) -> int:
    """Inverted lists for ``n`` vectors: ``4 sqrt(n)``, at most ``n // 39``, at least 1.

    FAISS wants 39 training points per centroid.
    """
    return max(1, min(n // 39, int(4 * math.sqrt(max(n, 1)))))


def in_memory(path: Path) -> np.ndarray:
    """A saved ``vectors.npy``, read whole into memory."""
    return np.load(path, allow_pickle=False)


def padded(m: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Empty results for ``m`` queries: scores ``-inf`` and rows ``-1``."""
    return np.full((m, k), -np.inf, dtype=np.float32), np.full((m, k), -1, dtype=np.int64)


def faiss_top(index: FaissIndex, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """FAISS's own ``k`` best per query, padded to ``k`` columns (rows -1 where none)."""
    scores, ids = padded(queries.shape[0], k)
    s, i = index.search(queries, min(k, index.ntotal))
    scores[:, : s.shape[1]] = s
    ids[:, : i.shape[1]] = i
    ids[ids < 0] = -1
    return scores, ids
