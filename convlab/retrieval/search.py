"""Search an index of units: best unit per doc, filters, scope, and optional rankers.

The order of the steps is fixed:

1. **filter** the rows by conversation (scope), project, role, side and time range
   (:class:`~convlab.retrieval.filters.Filters`);
2. **hierarchical** (optional): keep only the top conversations by centroid similarity
   above a floor (:class:`~convlab.retrieval.rankers.hierarchical.ConversationFirst`);
3. **retrieve** per view: dense (cosine similarity, exact inside a subset), lexical (BM25) or
   both (:class:`~convlab.retrieval.options.Retrieval`); each view fetches
   :attr:`SearchOptions.fetch` units and groups them per doc (**best_per_doc**:
   a doc, a turn in chats or a message in dialogs, takes its best unit's score), doubling the
   depth until it has :attr:`SearchOptions.pool` docs or no rows are left, so ``k`` docs come
   back whenever ``k`` docs match, however many units a doc holds;
4. **fuse** (hybrid): the dense and BM25 doc rankings fused by :attr:`RetrievalOptions.fusion`
   (RRF by default: ``1/(k + rank)`` summed), through :func:`convlab.fusion.fuse_carrying`
   (:func:`~convlab.retrieval.fused.fused_docs`), as a system's views are fused;
5. the doc rankers the options hold (:attr:`SearchOptions.rankers`, by stage), each
   ``(Candidates, RankContext) -> Candidates`` (:mod:`convlab.retrieval.rankers`):

   - **session** (optional, :mod:`convlab.retrieval.sessions`): ``(1 - w) * score + w *``
     the best score of the doc's session, or the docs of the top sessions only;
   - **recency** (optional): ``score * (1 + 0.20 * max(0, 1 - age_days / 14))``,
     age from :attr:`SearchOptions.now` (default: the time of the search);
   - **density** (optional):
     ``score * (1 + 0.15 * min(1, (hits in conversation - 1)/3))``;
   - **mmr** (optional): diversify the docs with their best units' vectors, relevance z-scored
     over the pool (the score becomes MMR's value);
6. cut to ``k`` and rank from 1.

The scores are on one scale per search, named by :attr:`SearchOptions.scoring`: cosine
(dense), bm25 (lexical) or the fusion method (hybrid: rrf), times the boosts; mmr when MMR is on.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from convlab import schema
from convlab.protocols import Candidates, Embedder, Query, RankContext, Ranker, Retriever
from convlab.retrieval.filters import filter_mask
from convlab.retrieval.fused import fused_docs
from convlab.retrieval.options import SearchOptions
from convlab.retrieval.rankers import BestPerDoc, ConversationFirst, conversation_centroids
from convlab.retrieval.retrievers import DenseRetriever, LexicalRetriever
from convlab.retrieval.second_round import seeded_rounds

if TYPE_CHECKING:
    from convlab.build import BuiltIndex
    from convlab.index import VectorIndex
    from convlab.index.bm25 import BM25Index

__all__ = ["Searcher", "search", "search_haystacks", "search_many"]


class Searcher:
    """Searches of one index with one set of options: arrays derived from the index once.

    :func:`search_many` makes one per batch; a caller that searches query after query (the
    search panel, a store's search) keeps one and calls :meth:`frame` for each, so nothing is
    derived from the whole index per query.
    """

    def __init__(
        self,
        index: VectorIndex,
        embedder: Embedder,
        options: SearchOptions,
        bm25: BM25Index | None,
        conversations_frame: pl.DataFrame | None = None,
    ) -> None:
        mode = options.retrieval.mode
        if mode.needs_bm25 and bm25 is None:
            raise ValueError(f"{mode} search needs a BM25 index over the units (bm25=...)")
        self.index, self.options = index, options
        self.dense = DenseRetriever(index, embedder, options.retrieval.rocchio)
        self.retrievers: list[Retriever] = []
        if mode.needs_vectors:
            self.retrievers.append(self.dense)
        if bm25 is not None and mode.needs_bm25:
            self.retrievers.append(LexicalRetriever.for_options(bm25, options, index.units))
        self.group = BestPerDoc()
        self.rankers: list[Ranker] = list(options.rankers)
        # one chunk (frames read or concatenated come in several): each query's gather of its
        # hits is then one copy; at 120k units in 40 chunks it took most of a warm search's time
        u = index.units.rechunk()
        self.units = u
        self.conv = u["conversation_id"].to_numpy()
        self.mask = filter_mask(u, options.filters, conversations_frame)
        self.by_conv = _rows_by_conversation(self.conv)
        self.times: list[datetime | None] = u["timestamp"].to_list()
        self.doc_ids: list[list[str]] = u["doc_ids"].to_list()
        self.now: datetime = options.now or datetime.now(UTC)
        second = options.retrieval.second_round
        self.texts: list[str] = u["text"].to_list() if second is not None else []
        # microseconds of every row's time (undated: the smallest int64), for query anchors
        self.stamps: np.ndarray | None = None
        if "temporal" in options.ranker_names:
            lowest = np.iinfo(np.int64).min
            self.stamps = u["timestamp"].dt.epoch("us").fill_null(lowest).to_numpy()
        self.centroids: tuple[np.ndarray, np.ndarray] | None = None
        self.first = options.retrieval.hierarchical or ConversationFirst()
        self._scope: tuple[tuple[str, ...] | None, np.ndarray | None] | None = None
        if options.retrieval.hierarchical is not None and u.height:
            self.centroids = conversation_centroids(index.vectors(np.arange(u.height)), self.conv)

    def rows(self, conversations: tuple[str, ...] | None) -> np.ndarray | None:
        """Rows passing the filters inside ``conversations`` (None: every row passes).

        The last scope's rows are kept: queries of one scope, searched one after the other, get
        the same array, which lets the dense retriever reuse the vectors it gathered for it.
        """
        if self._scope is not None and self._scope[0] == conversations:
            return self._scope[1]
        self._scope = (conversations, self._rows(conversations))
        return self._scope[1]

    def _rows(self, conversations: tuple[str, ...] | None) -> np.ndarray | None:
        if conversations is None:
            return None if self.mask.all() else np.flatnonzero(self.mask)
        parts = [self.by_conv.get(c, np.zeros(0, np.int64)) for c in conversations]
        r = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        return r[self.mask[r]]

    def anchor(self, query: Query, scope: tuple[str, ...] | None) -> datetime | None:
        """The query's time, else its scope's latest message time (None: not needed; no row)."""
        if self.stamps is None or query.time is not None:
            return query.time
        lowest, rows = np.iinfo(np.int64).min, self._rows(scope)
        stamps = self.stamps if rows is None else self.stamps[rows]
        latest = int(stamps.max()) if stamps.size else lowest
        return None if latest == lowest else datetime.fromtimestamp(latest / 1e6, UTC)

    def context(self, query: Query, anchor: datetime | None = None) -> RankContext:
        """What the rankers read about ``query`` (its ``anchor``: :meth:`anchor`) and the index."""
        return RankContext(
            query=query,
            units=self.units,
            conversation_of_row=self.conv,
            times=self.times,
            doc_ids=self.doc_ids,
            index=self.index,
            now=self.now,
            k=self.options.k,
            anchor=anchor,
        )

    def views(self, query: Query, conversations: tuple[str, ...] | None) -> list[Candidates | None]:
        """Each retriever's docs for one query inside ``conversations`` (None: the options').

        Returns:
            One entry per retriever: its docs' best units, grouped per doc, best first (None:
            nothing found).
        """
        if self.centroids is not None:
            conversations = self.first.select(query.vector, self.centroids, conversations)
        rows = self.rows(conversations)
        if rows is not None and rows.size == 0:
            return [None] * len(self.retrievers)
        context = self.context(query)
        return [self.rounds(r, query, rows, context) for r in self.retrievers]

    def rounds(
        self, retriever: Retriever, query: Query, rows: np.ndarray | None, context: RankContext
    ) -> Candidates | None:
        """One retriever's docs (:meth:`docs`), with the second round when the options ask."""
        first = self.docs(retriever, query, rows, context)
        config = self.options.retrieval.second_round
        if config is None:
            return first

        def seed(row: int) -> Query:
            vector = self.index.vectors(np.array([row], dtype=np.int64))[0]
            return Query(self.texts[row], np.asarray(vector, dtype=np.float32), query.time)

        return seeded_rounds(first, config, seed, lambda q: self.docs(retriever, q, rows, context))

    def docs(
        self, retriever: Retriever, query: Query, rows: np.ndarray | None, context: RankContext
    ) -> Candidates | None:
        """One retriever's best units grouped per doc: :attr:`SearchOptions.pool` docs, or all.

        The retriever fetches :attr:`SearchOptions.fetch` units; while they make fewer than
        ``pool`` docs and it returned all it was asked for (more rows are left), the depth
        doubles. One long turn of many units therefore cannot crowd the other docs out.
        """
        available = self.units.height if rows is None else rows.size
        depth = min(self.options.fetch, max(available, 1))
        while True:
            found = retriever.search(query, depth, rows)
            docs = self.group(found, context)
            if len(docs) >= self.options.pool or len(found) < depth or depth >= available:
                return docs if len(docs) else None
            depth = min(2 * depth, available)

    def many(
        self, queries: Sequence[Query], ids: Sequence[str], scopes: Sequence[tuple[str, ...] | None]
    ) -> pl.DataFrame:
        """Hits of every query, each in its scope, with its ``query_id``, in the queries' order.

        The queries are searched grouped by scope (the rows and vectors of a scope are prepared
        once for all its queries); in hybrid search the views' doc rankings of all queries are
        fused in one call (:func:`~convlab.retrieval.fused.fused_docs`); then each query's docs
        go through the doc rankers and are cut to ``k``, and the hits of all queries are read
        from the units frame in one gather.
        """
        views: list[list[Candidates | None]] = [[None] * len(queries) for _ in self.retrievers]
        order = sorted(range(len(queries)), key=lambda i: _scope_key(scopes[i]))
        for i in order:
            for v, docs in enumerate(self.views(queries[i], scopes[i])):
                views[v][i] = docs
        if len(views) > 1:
            method, params = self.options.retrieval.fusion, self.options.retrieval.fusion_params
            found = fused_docs(views, method=method, **params)
        else:
            found = views[0]
        ranked = [self.ranked(q, c, s) for q, c, s in zip(queries, found, scopes, strict=True)]
        return _hits(self.units, ids, ranked)

    def ranked(
        self, query: Query, docs: Candidates | None, scope: tuple[str, ...] | None = None
    ) -> Candidates | None:
        """``docs`` (found in ``scope``) through the doc rankers, cut to ``k``."""
        if docs is None:
            return None
        context = self.context(query, self.anchor(query, scope))
        for ranker in self.rankers:
            docs = ranker(docs, context)
        return docs.take(slice(0, self.options.k))

    def frame(self, queries: pl.DataFrame, *, scoped: bool = False) -> pl.DataFrame:
        """Hits of ``queries`` (``query_id``, ``text``; see :func:`search_many`)."""
        texts = queries["text"].to_list()
        scope = self.options.filters.conversations
        scopes: list[tuple[str, ...] | None] = [scope] * len(texts)
        if scoped and "conversation_id" in queries.columns:
            scopes = [
                scope if c is None else (str(c),) for c in queries["conversation_id"].to_list()
            ]
        return self.many(
            _timed(self.dense.queries(texts), queries), queries["query_id"].to_list(), scopes
        )


def _timed(found: list[Query], queries: pl.DataFrame) -> list[Query]:
    """The queries with their ``time`` column's times, where the frame has one."""
    if "time" not in queries.columns:
        return found
    return [Query(q.text, q.vector, t) for q, t in zip(found, queries["time"], strict=True)]


def _scope_key(scope: tuple[str, ...] | None) -> tuple[int, tuple[str, ...]]:
    """A sort key grouping equal scopes (None, the whole index, first)."""
    return (0, ()) if scope is None else (1, scope)


def _rows_by_conversation(conv: np.ndarray) -> dict[str, np.ndarray]:
    """Each conversation's rows, ascending."""
    out: dict[str, np.ndarray] = {}
    order = np.argsort(conv, kind="stable")
    ids, starts = np.unique(conv[order], return_index=True)
    for i, cid in enumerate(ids):
        end = starts[i + 1] if i + 1 < len(starts) else len(order)
        out[str(cid)] = np.sort(order[starts[i] : end])
    return out


def search(
    index: VectorIndex | BuiltIndex,
    query: str,
    k: int | None = None,
    *,
    embedder: Embedder,
    options: SearchOptions | None = None,
    bm25: BM25Index | None = None,
    conversations_frame: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Search ``index`` for ``query``; one row per doc (see the module docstring for the steps).

    Args:
        index: a :class:`convlab.index.VectorIndex`, or what :func:`convlab.build_index` built
            (its BM25 is then used unless ``bm25`` is given).
        query: the text to search for.
        k: docs to return (overrides ``options.k``).
        embedder: the embedder the index was built with.
        options: filters and rankers.
        bm25: a :class:`convlab.index.bm25.BM25Index` over the same units (lexical and hybrid).
        conversations_frame: the conversations (:data:`convlab.schema.CONVERSATIONS`), needed
            by ``options.filters.projects``.

    Returns:
        Hits: :data:`convlab.schema.HITS`, the last columns those of the doc's best unit.

    Example:
        >>> hits = search(index, "nginx websockets", embedder=emb)  # doctest: +SKIP
    """
    from convlab.build import BuiltIndex

    if isinstance(index, BuiltIndex):
        bm25 = bm25 if bm25 is not None else index.bm25
        index = index.index
    options = options or SearchOptions()
    if k is not None:
        options = options.replace(k=k)
    q = pl.DataFrame({"query_id": ["q"], "text": [query]})
    return search_many(
        index,
        q,
        embedder=embedder,
        options=options,
        bm25=bm25,
        conversations_frame=conversations_frame,
    )


def search_many(
    index: VectorIndex,
    queries: pl.DataFrame,
    *,
    embedder: Embedder,
    options: SearchOptions | None = None,
    bm25: BM25Index | None = None,
    scoped: bool = False,
    conversations_frame: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Search many queries at once (embedded in one call).

    Args:
        index: a :class:`convlab.index.VectorIndex`.
        queries: ``query_id`` and ``text`` columns, and ``conversation_id`` when ``scoped``.
        embedder: the embedder the index was built with.
        options: filters and rankers shared by every query.
        bm25: BM25 over the same units (lexical and hybrid).
        scoped: search each query only inside its own ``conversation_id`` (LoCoMo's protocol).
        conversations_frame: the conversations, needed by ``options.filters.projects``.
    """
    options = options or SearchOptions()
    searcher = Searcher(index, embedder, options, bm25, conversations_frame)
    return searcher.frame(queries, scoped=scoped)


def search_haystacks(
    index: VectorIndex,
    queries: pl.DataFrame,
    haystacks: pl.DataFrame,
    *,
    embedder: Embedder,
    options: SearchOptions | None = None,
    bm25: BM25Index | None = None,
) -> pl.DataFrame:
    """Search each query inside its own set of conversations (LongMemEval's haystacks).

    The index's arrays are prepared once for all queries and each query is restricted to the rows
    of its haystack's conversations: nothing is copied per query. A query without a haystack row
    searches nothing.

    Args:
        index: a :class:`convlab.index.VectorIndex`.
        queries: ``query_id`` and ``text``.
        haystacks: ``query_id, conversation_id`` rows: the conversations each query searches.
        embedder: the embedder the index was built with.
        options: filters and rankers shared by every query (its ``conversations`` is ignored).
        bm25: BM25 over the same units (lexical and hybrid).
    """
    options = options or SearchOptions()
    searcher = Searcher(index, embedder, options, bm25)
    scope: dict[str, tuple[str, ...]] = {
        q: tuple(c)
        for q, c in haystacks.group_by("query_id", maintain_order=True)
        .agg("conversation_id")
        .iter_rows()
    }
    ids = queries["query_id"].to_list()
    queries_in = _timed(searcher.dense.queries(queries["text"].to_list()), queries)
    return searcher.many(queries_in, ids, [scope.get(q, ()) for q in ids])


def _empty_hits() -> pl.DataFrame:
    return schema.empty(schema.HITS)


def _hits(
    units: pl.DataFrame, ids: Sequence[str], found: Sequence[Candidates | None]
) -> pl.DataFrame:
    """The hits frame of each query's docs (grouped by :class:`BestPerDoc`), in one gather.

    Args:
        units: the index's units frame.
        ids: the queries' ids.
        found: each query's docs, best first (None: no hit).
    """
    parts = [(qid, c) for qid, c in zip(ids, found, strict=True) if c is not None and len(c)]
    if not parts:
        return _empty_hits()
    rows = np.concatenate([c.rows for _, c in parts])
    u = units[rows]
    return u.select(
        pl.Series("query_id", [qid for qid, c in parts for _ in range(len(c))], dtype=pl.String),
        pl.Series(
            "rank", np.concatenate([np.arange(1, len(c) + 1) for _, c in parts]), dtype=pl.Int32
        ),
        pl.Series("score", np.concatenate([c.scores for _, c in parts]), dtype=pl.Float64),
        "unit_id",
        pl.Series("doc_id", [d for _, c in parts for d in c.docs or ()], dtype=pl.String),
        "conversation_id",
        "turn_index",
        "message_index",
        "strategy",
        "text",
        "role",
        "side",
        "timestamp",
        "chunk_ids",
    ).select(list(schema.HITS))
