"""The FAISS index kinds, by name: :data:`INDEX_KINDS` (the ``--index`` choices).

Each kind is a builder ``(dimension, rows, params) -> an untrained, empty FAISS index``:

- ``flat``: exact inner product (``IndexFlatIP``); vectors are normalised, so scores are cosine.
- ``hnsw``: ``IndexHNSWFlat`` (M=32, efConstruction=200, efSearch=64 by default: FAISS's
  efSearch 16 loses recall), for sub-millisecond queries at 100k+ units.
- ``ivf``: ``IndexIVFFlat`` (nlist ~ 4 sqrt(n), nprobe=16 by default: nprobe 1 is poor).
- ``ivfpq``: ``IndexIVFPQ`` (optionally OPQ) with exact re-scoring from float16 vectors on disk
  (:mod:`convlab.index.ivfpq`).

FAISS is the ``convlab-memory[index]`` extra, imported when a kind is built
(:func:`convlab.index.faisslib.load_faiss`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from convlab.index.faisslib import FaissIndex, load_faiss
from convlab.index.ivfpq import IVFPQParams, make_ivfpq
from convlab.registry import Registry

__all__ = ["INDEX_KINDS", "IndexBuilder"]

IndexBuilder = Callable[[int, int, dict[str, Any]], FaissIndex]
"""``(dimension, rows, params) -> FAISS index``: one index kind."""

INDEX_KINDS: Registry[IndexBuilder] = Registry("index kind")
"""Index kind name -> builder."""


@INDEX_KINDS.register("flat")
def _flat(d: int, n: int, params: dict[str, Any]) -> FaissIndex:
    return load_faiss().IndexFlatIP(d)


@INDEX_KINDS.register("hnsw")
def _hnsw(d: int, n: int, params: dict[str, Any]) -> FaissIndex:
    faiss = load_faiss()
    index = faiss.IndexHNSWFlat(d, int(params.get("hnsw_m", 32)), faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = int(params.get("ef_construction", 200))
    index.hnsw.efSearch = int(params.get("ef_search", 64))
    return index


@INDEX_KINDS.register("ivf")
def _ivf(d: int, n: int, params: dict[str, Any]) -> FaissIndex:
    faiss = load_faiss()
    nlist = int(params.get("nlist") or max(1, min(n // 39, int(4 * math.sqrt(max(n, 1))))))
    index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
    index.nprobe = int(params.get("nprobe", 16))
    return index


@INDEX_KINDS.register("ivfpq")
def _ivfpq(d: int, n: int, params: dict[str, Any]) -> FaissIndex:
    return make_ivfpq(d, IVFPQParams.from_dict(params).resolved(n, d))
