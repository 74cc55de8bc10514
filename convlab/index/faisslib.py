"""FAISS, imported when used (the ``convlab-memory[index]`` extra), and the part of its API used.

FAISS ships no type stubs; :class:`FaissIndex` names the methods :class:`convlab.index.VectorIndex`
calls on any kind, so the rest of the package is typed by it rather than ``Any``.
"""

from __future__ import annotations

from types import ModuleType
from typing import Protocol

import numpy as np

from convlab.extras import require

__all__ = ["FaissIndex", "load_faiss"]


class FaissIndex(Protocol):
    """A FAISS index of any kind (flat, HNSW, IVF, IVF-PQ, an OPQ pre-transform)."""

    ntotal: int

    def train(self, x: np.ndarray) -> None:
        """Learn the index's quantizers from ``x`` (a no-op for flat and HNSW)."""
        ...

    def add(self, x: np.ndarray) -> None:
        """Append the rows of ``x``."""
        ...

    def search(self, x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(distances, ids)`` of the ``k`` nearest rows per query; ids -1 where none."""
        ...


def load_faiss() -> ModuleType:
    """The ``faiss`` module.

    Raises:
        ImportError: FAISS is not installed, naming the ``convlab-memory[index]`` extra.
    """
    return require("faiss", "index", feature="a FAISS index")
