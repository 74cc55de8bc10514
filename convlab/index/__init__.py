"""Indexes over units: dense vectors in FAISS and BM25 over their text.

- :mod:`~convlab.index.vector`: :class:`VectorIndex`, units and their vectors, searchable, saved
  whole or not at all with a manifest.
- :mod:`~convlab.index.manifest`: :class:`IndexManifest`, an index's typed manifest, and the one
  place it is written and read.
- :mod:`~convlab.index.kinds`: :data:`INDEX_KINDS` (flat, hnsw, ivf, ivfpq), one module per kind
  behind the :class:`~convlab.index.kinds.IndexKind` contract: how it builds, trains, keeps its
  vectors, loads and searches.
- :mod:`~convlab.index.shards`: vectors that come in shards (loaders, checks, the training
  sample drawn across them).
- :mod:`~convlab.index.bm25`: :class:`BM25Index` (bm25s), BM25 over the same units.
- :mod:`~convlab.index.faisslib`: FAISS imported when used, and the :class:`FaissIndex` protocol.

FAISS and bm25s are the ``convlab-memory[index]`` extra, imported when an index is built or loaded.
"""

from __future__ import annotations

from convlab.index.bm25 import BM25Index
from convlab.index.kinds import INDEX_KINDS
from convlab.index.manifest import IndexManifest
from convlab.index.vector import VectorIndex

__all__ = ["INDEX_KINDS", "BM25Index", "IndexManifest", "VectorIndex"]
