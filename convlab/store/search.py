"""Searching a store with a system: its views loaded once, then the shared system search.

:class:`StoreSearch` is state (the loaded indexes, BM25 and the query embedder of one pinned
version), so it is a class; the search itself is
:func:`convlab.systems.search.search_system`, which ranks with the parts ``eval.run`` ranks
with (:func:`~convlab.systems.hits.view_options`, a :class:`~convlab.retrieval.search.Searcher`
per view, :func:`~convlab.systems.hits.system_hits`); ``eval.run`` calls those parts itself, not
``search_system`` (:mod:`convlab.evaluation.evaluate`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import polars as pl

from convlab.defaults import K
from convlab.store.hits import placed
from convlab.systems import resolve_system
from convlab.systems.search import HeldView, OnceEmbedder, missing_views, search_system

if TYPE_CHECKING:
    from convlab.index import VectorIndex
    from convlab.index.bm25 import BM25Index
    from convlab.protocols import Embedder
    from convlab.retrieval import SearchOptions
    from convlab.retrieval.search import Searcher
    from convlab.store.format import StoreManifest
    from convlab.systems.system import System

__all__ = ["StoreSearch", "ViewSource", "units_only_index"]


class ViewSource(Protocol):
    """What :class:`StoreSearch` reads of a store (:class:`convlab.store.Store` is one).

    A structural type, so that this module, which ``Store.search`` calls, does not import the
    module that defines the store.
    """

    @property
    def directory(self) -> Path:
        """The store's folder."""
        ...

    def strategies(self) -> dict[str, bool]:
        """Per strategy held, whether its units are embedded."""
        ...

    def bm25(self, strategy: str | None = None) -> BM25Index | None:
        """A strategy's BM25 index."""
        ...

    def index(self, strategy: str | None = None) -> VectorIndex:
        """A strategy's vector index."""
        ...

    def frame(self, name: str) -> pl.DataFrame:
        """A stored frame."""
        ...

    def manifest(self) -> StoreManifest:
        """The live version's manifest."""
        ...

    def system(self) -> System:
        """The store's own system."""
        ...


class StoreSearch:
    """A store's views, loaded on first use and kept, searched with any system they serve.

    Args:
        store: the store (its pinned version is read).
        embedder: the query embedder (default: the one the store's manifest names; loaded only
            when a system with a dense view searches).
    """

    def __init__(self, store: ViewSource, embedder: Embedder | None = None) -> None:
        self.store = store
        self._embedder = OnceEmbedder(embedder) if embedder is not None else None
        self._held: dict[str, HeldView] = {}
        self._searchers: dict[str, Searcher] = {}

    def held(self, strategies: list[str]) -> dict[str, HeldView]:
        """The views of ``strategies`` (each loaded on its first use)."""
        embedded = self.store.strategies()
        # embedded views first: a BM25-only view takes its dimension from one of them, so no
        # index is loaded twice (the store's first strategy is always embedded)
        for s in sorted(strategies, key=lambda s: not embedded.get(s, False)):
            if s in self._held or s not in embedded:
                continue
            bm25 = self.store.bm25(s)
            if embedded[s]:
                index = self.store.index(s)
            else:
                units = self.store.frame("units").filter(pl.col("strategy") == s)
                index = units_only_index(units, self._dimension())
            self._held[s] = HeldView(index, bm25, embedded[s])
        return {s: self._held[s] for s in strategies if s in self._held}

    def _dimension(self) -> int:
        """The vectors' dimension: a held embedded view's, else the store's first index's."""
        for h in self._held.values():
            if h.dense:
                return h.vector_index.dimension
        return self.store.index().dimension

    def embedder(self) -> OnceEmbedder:
        """The query embedder, loaded on first use (queries embedded once each)."""
        if self._embedder is None:
            from convlab.embed import make_embedder

            manifest = self.store.manifest()
            self._embedder = OnceEmbedder(
                make_embedder(manifest.embedder, model_id=manifest.model_id)
            )
        return self._embedder

    def search(
        self,
        query: str,
        *,
        system: System | str | None = None,
        k: int = K,
        options: SearchOptions | None = None,
        conversations_frame: pl.DataFrame | None = None,
    ) -> pl.DataFrame:
        """See :meth:`convlab.store.Store.search`.

        ``conversations_frame``: the store's conversations, needed by a project filter (read
        from the store when ``options.filters.projects`` is set and it is not given).
        """
        if conversations_frame is None and options is not None and options.filters.projects:
            conversations_frame = self.store.frame("conversations")
        own = self.store.system()
        chosen = own if system is None or system == own.name else resolve_system(system)
        held = self.held(list(dict.fromkeys(v.strategy for v in chosen.views)))
        missing = missing_views(chosen, held)
        if missing:
            have = [
                f"{s}{'' if dense else ' (BM25 only)'}"
                for s, dense in self.store.strategies().items()
            ]
            raise ValueError(
                f"{self.store.directory} holds no view {', '.join(missing)} of system "
                f"{chosen.name!r}; it holds {', '.join(have)}: index it with "
                f"`convlab index --system {chosen.name} --rebuild`"
            )
        dense = any(v.retrieval.needs_vectors for v in chosen.views)
        queries = pl.DataFrame({"query_id": ["q"], "text": [query]})
        hits = search_system(
            held,
            queries,
            chosen,
            embedder=self.embedder() if dense else None,
            k=k,
            options=options,
            searchers=self._searchers,
            conversations_frame=conversations_frame,
        )
        return placed(
            self.store, hits, query, options.filters.roles if options is not None else None
        )


def units_only_index(units: pl.DataFrame, dimension: int) -> VectorIndex:
    """A :class:`VectorIndex` of units without vectors, for a strategy searched by BM25 alone.

    Its vectors are one row of zeros broadcast (no memory per unit); nothing searches them. Its
    manifest names no model and the kind ``none``, which no search by kind accepts.
    """
    from convlab._version import __version__
    from convlab.index import IndexManifest, VectorIndex
    from convlab.index.faisslib import load_faiss

    zeros = np.broadcast_to(np.zeros((1, dimension), dtype=np.float32), (units.height, dimension))
    flat = load_faiss().IndexFlatIP(dimension)
    manifest = IndexManifest(
        model_id="",
        embedder=None,
        dimension=dimension,
        kind="none",
        params={},
        strategy=None,
        policy=None,
        corpus_fingerprint=None,
        convlab_version=__version__,
        units=units.height,
        created=0.0,
    )
    return VectorIndex(units, zeros, flat, manifest)
