"""Indexes over units: dense vectors in FAISS and BM25 over their text.

- :mod:`~convlab.index.vector`: :class:`VectorIndex`, units and their vectors, searchable, saved
  whole or not at all with a manifest.
- :mod:`~convlab.index.kinds`: :data:`INDEX_KINDS` (flat, hnsw, ivf, ivfpq), one FAISS builder
  per kind.
- :mod:`~convlab.index.ivfpq`: the IVF-PQ parameters, the shard-by-shard build and the exact
  re-scoring from float16 vectors on disk.
- :mod:`~convlab.index.bm25`: :class:`BM25Index` (bm25s), BM25 over the same units.
- :mod:`~convlab.index.faisslib`: FAISS imported when used, and the :class:`FaissIndex` protocol.

FAISS and bm25s are the ``convlab-memory[index]`` extra, imported when an index is built or loaded.
"""

from __future__ import annotations

from convlab.index.bm25 import BM25Index
from convlab.index.kinds import INDEX_KINDS
from convlab.index.vector import VectorIndex

__all__ = ["INDEX_KINDS", "BM25Index", "VectorIndex"]
