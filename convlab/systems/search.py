"""Search with a system over the views one holds: a store's, or the search panel's in memory.

:func:`search_system` searches each view of a :class:`~convlab.systems.system.System` with
:func:`convlab.retrieval.search_many` (as ``eval.run`` does, to the evaluation's depth, with
:func:`~convlab.systems.hits.view_options`) and makes the system's ranking with
:func:`~convlab.systems.hits.system_hits`: the function ``eval.run`` calls for every system of
fixed weights. There is no second implementation of a system. :func:`system_scoring` says what
its scores are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import polars as pl

from convlab.defaults import K
from convlab.systems.hits import DEPTH, system_hits, view_options
from convlab.systems.match import with_matches
from convlab.systems.system import System

if TYPE_CHECKING:
    from convlab.index import VectorIndex
    from convlab.index.bm25 import BM25Index
    from convlab.protocols import Embedder
    from convlab.retrieval import SearchOptions
    from convlab.retrieval.search import Searcher

__all__ = [
    "DEPTH",
    "HeldView",
    "OnceEmbedder",
    "missing_views",
    "search_system",
    "system_scoring",
]


MEMO = 256
"""Query vectors an :class:`OnceEmbedder` keeps."""


class HeldView(NamedTuple):
    """One strategy's searchable parts: its units and vectors, and BM25 over the same units.

    Attributes:
        vector_index: the units (and their vectors when ``dense``).
        bm25: BM25 over the same rows (None: not held).
        dense: whether the vectors are real embeddings (False: BM25 only).
    """

    vector_index: VectorIndex
    bm25: BM25Index | None
    dense: bool


class OnceEmbedder:
    """An embedder that embeds each query text once, however many views search it.

    Args:
        embedder: the embedder the vectors were made with.
    """

    def __init__(self, embedder: Embedder | None, *, dimension: int = 0) -> None:
        self.inner = embedder
        self.model_id = embedder.model_id if embedder is not None else ""
        self.dimension = embedder.dimension if embedder is not None else dimension
        self._memo: dict[str, np.ndarray] = {}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' vectors, each text embedded on its first request only.

        Without an embedder (a system of BM25 views alone) every vector is zeros: no view
        reads it.
        """
        if len(self._memo) > MEMO:  # a long session: keep the memo small
            self._memo.clear()
        new = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if new and self.inner is None:
            self._memo.update((t, np.zeros(self.dimension, dtype=np.float32)) for t in new)
        elif new and self.inner is not None:
            vectors = np.asarray(self.inner.encode(new), dtype=np.float32)
            self._memo.update(zip(new, vectors, strict=True))
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])


def system_scoring(system: System, options: SearchOptions) -> str:
    """What the scores of ``system``'s hits are (:func:`convlab.retrieval.options.scoring_meaning`).

    One view: its retrieval's scoring under ``options`` (``cosine``, ``bm25``, the hybrid
    fusion method, ``mmr``, with ``+recency``/``+density``); several: the system's fusion
    method (``convex``, ...).

    Example:
        >>> from convlab.retrieval import SearchOptions
        >>> from convlab.systems import resolve_system
        >>> system_scoring(resolve_system("hybrid:message"), SearchOptions.of(density=True))
        'rrf+density'
    """
    if system.fused:
        return system.fusion
    return options.replace(retrieval=system.views[0].retrieval).scoring


def missing_views(system: System, held: Mapping[str, HeldView]) -> list[str]:
    """The views of ``system`` that ``held`` cannot search (empty: it can search them all)."""
    out = []
    for view in system.views:
        h = held.get(view.strategy)
        if (
            h is None
            or (view.retrieval.needs_vectors and not h.dense)
            or (view.retrieval.needs_bm25 and h.bm25 is None)
        ):
            out.append(view.name)
    return out


def search_system(
    held: Mapping[str, HeldView],
    queries: pl.DataFrame,
    system: System,
    *,
    embedder: Embedder | None,
    k: int = K,
    options: SearchOptions | None = None,
    searchers: dict[str, Searcher] | None = None,
    conversations_frame: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The ``k`` best docs of each query under ``system``, searched in ``held``'s views.

    Args:
        held: per strategy, its searchable parts.
        queries: ``query_id`` and ``text``.
        system: the system (fixed weights).
        embedder: the embedder of the vectors (each query is embedded once); None when no
            view of ``system`` is dense.
        k: docs per query.
        options: filters and rankers used instead of the system's own (its ``k`` ignored).
        searchers: where to keep each view's :class:`~convlab.retrieval.search.Searcher`
            between calls (what is derived from a whole index is then derived once, not per
            query: the panel and a store's search keep one, with one embedder: a searcher
            embeds with the embedder it was made with); None derives it per call.
        conversations_frame: the conversations (:data:`convlab.schema.CONVERSATIONS`), needed
            by a project filter (``options.filters.projects``).

    Returns:
        Hits (:data:`convlab.schema.HITS`), ranks 1..k per query, and each hit's best
        message inside its doc by the system's own scoring
        (:func:`convlab.systems.match.with_matches`).

    Raises:
        ValueError: a view ``held`` cannot search (naming it), or a system whose weights are to
            be cross-validated.
    """
    missing = missing_views(system, held)
    if missing:
        raise ValueError(
            f"system {system.name!r} needs the view(s) {', '.join(missing)}, which are not held"
        )
    from convlab.retrieval.search import Searcher

    if options is not None:
        system = replace(system, options=options)
    depth = max(k, DEPTH)
    if embedder is None and any(v.retrieval.needs_vectors for v in system.views):
        raise ValueError(f"system {system.name!r} has dense views: pass the embedder")
    dimension = next(iter(held.values())).vector_index.dimension if held else 0
    once = (
        embedder
        if isinstance(embedder, OnceEmbedder)
        else OnceEmbedder(embedder, dimension=dimension)
    )
    kept = {} if searchers is None else searchers
    hits, used = [], []
    for view in system.views:
        h = held[view.strategy]
        opts = view_options(system, view, depth)
        key = json.dumps([view.strategy, opts.as_dict()], default=str, sort_keys=True)
        searcher = kept.get(key)
        if searcher is None or searcher.index is not h.vector_index:
            searcher = Searcher(h.vector_index, once, opts, h.bm25, conversations_frame)
            kept[key] = searcher
        hits.append(searcher.frame(queries))
        used.append(searcher)
    found = system_hits(system, hits, depth=depth).filter(pl.col("rank") <= k)
    asked = dict(
        zip(queries["query_id"], used[0].dense.queries(queries["text"].to_list()), strict=True)
    )
    return with_matches(found, system, used, asked)
