"""First-stage retrievers: dense (FAISS over unit vectors) and lexical (BM25 over unit texts).

Both satisfy :class:`convlab.protocols.Retriever`: ``search(query, depth, rows) -> Candidates``,
best first, restricted to ``rows`` of the units frame when given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from convlab.index.topk import top_into
from convlab.protocols import Candidates, Embedder, Query
from convlab.retrieval.prf import PRF, expand
from convlab.retrieval.rocchio import Rocchio, moved

if TYPE_CHECKING:
    import polars as pl

    from convlab.index import VectorIndex
    from convlab.index.bm25 import BM25Index
    from convlab.retrieval.options import SearchOptions

__all__ = ["DenseRetriever", "LexicalRetriever"]


class DenseRetriever:
    """Cosine similarity of the query vector to the unit vectors of a :class:`VectorIndex`.

    A search inside a subset of rows (a conversation scope, filters) is exact over that subset,
    as :meth:`VectorIndex.search` does it, with one difference of cost only: the subset's vectors
    are gathered once and kept while the next query searches the same ``rows`` array (the same
    object), so the queries of one conversation, searched one after the other, share one gather
    instead of copying the conversation's vectors per query. Each query's similarities are still
    its own matrix-vector product, so the scores are bit for bit those of the index's search.

    With ``rocchio``, Rocchio feedback (:mod:`convlab.retrieval.rocchio`): a first pass among
    ``rows`` gives ``rocchio.fb_docs`` feedback units, whose stored vectors move the query
    (:func:`convlab.retrieval.rocchio.moved`) for a second pass among the same ``rows``. A
    query whose first pass finds nothing is searched as it is.

    Args:
        index: the units and their vectors.
        embedder: the embedder the index was built with (it embeds the queries).
        rocchio: Rocchio feedback (None: the one pass).
    """

    def __init__(
        self, index: VectorIndex, embedder: Embedder, rocchio: Rocchio | None = None
    ) -> None:
        self.index = index
        self.embedder = embedder
        self.rocchio = rocchio
        self._rows: np.ndarray | None = None  # the subset whose vectors are held
        self._vectors = np.zeros((0, index.dimension), dtype=np.float32)
        # the last query moved by feedback: a search that fetches deeper asks again
        self._moved: tuple[str, np.ndarray | None, Query] | None = None

    def queries(self, texts: Sequence[str]) -> list[Query]:
        """The queries of a batch, embedded in one call."""
        if not texts:
            return []
        vectors = np.asarray(self.embedder.encode(list(texts)), dtype=np.float32)
        return [Query(t, v) for t, v in zip(texts, vectors, strict=True)]

    def search(self, query: Query, depth: int, rows: np.ndarray | None) -> Candidates:
        """The ``depth`` most similar units among ``rows`` (exact inside a subset)."""
        if self.rocchio is not None:
            query = self._with_feedback(query, self.rocchio, rows)
        return self._one_pass(query, depth, rows)

    def _with_feedback(self, query: Query, rocchio: Rocchio, rows: np.ndarray | None) -> Query:
        """``query`` moved by its first pass among ``rows``, made once per query and rows."""
        last = self._moved
        if last is not None and last[0] == query.text and last[1] is rows:
            return last[2]
        first = self._one_pass(query, rocchio.fb_docs, rows)
        if len(first.rows):
            vector = moved(query.vector, self.index.vectors(first.rows), rocchio)
            query = Query(query.text, vector)
        self._moved = (query.text, rows, query)
        return query

    def _one_pass(self, query: Query, depth: int, rows: np.ndarray | None) -> Candidates:
        """One search of ``query.vector`` among ``rows``."""
        if rows is None:
            scores, found = self.index.search(query.vector[None, :], depth, rows=rows)
            keep = found[0] >= 0
            return Candidates.of(found[0][keep], scores[0][keep])
        return self._search_subset(query, depth, rows)

    def _search_subset(self, query: Query, depth: int, rows: np.ndarray) -> Candidates:
        """:meth:`VectorIndex.search` restricted to ``rows``, the subset's vectors gathered once.

        Raises:
            ValueError: the query's dimension is not the index's.
        """
        q = np.ascontiguousarray(np.atleast_2d(query.vector), dtype=np.float32)
        if q.shape[1] != self.index.dimension:
            raise ValueError(
                f"queries have {q.shape[1]} dimensions, the index {self.index.dimension}"
            )
        subset = np.asarray(rows, dtype=np.int64)
        if subset.size == 0:
            return Candidates.empty()
        if rows is not self._rows:
            self._rows, self._vectors = rows, self.index.vectors(subset)
        scores = np.full(depth, -np.inf, dtype=np.float32)
        found = np.full(depth, -1, dtype=np.int64)
        top_into((q @ self._vectors.T)[0], depth, subset, scores, found)
        keep = found >= 0
        return Candidates.of(found[keep], scores[keep])


class LexicalRetriever:
    """BM25 scores of the query's terms in the unit texts (rows scoring 0 are left out).

    With ``prf``, RM3 pseudo-relevance feedback (:mod:`convlab.retrieval.prf`): a first BM25
    pass among ``rows`` gives ``prf.fb_docs`` feedback units, whose texts (tokenised as the
    index tokenised them) make the expanded, weighted query of a second pass; its scores are
    the weighted sums of the terms' BM25 scores. A query whose first pass finds nothing is
    searched as it is.

    Args:
        bm25: a :class:`convlab.index.bm25.BM25Index` over the same units frame.
        prf: RM3 feedback (None: plain BM25, the one pass).
        texts: the units' texts, row for row (needed with ``prf``).
    """

    def __init__(
        self, bm25: BM25Index, prf: PRF | None = None, texts: Sequence[str] | None = None
    ) -> None:
        if prf is not None and texts is None:
            raise ValueError("pseudo-relevance feedback needs the units' texts")
        self.bm25, self.prf, self.texts = bm25, prf, texts
        # the last query's expansion: a search that fetches deeper asks again
        self._expanded: tuple[str, np.ndarray | None, dict[str, float] | None] | None = None

    @classmethod
    def for_options(
        cls, bm25: BM25Index, options: SearchOptions, units: pl.DataFrame
    ) -> LexicalRetriever:
        """The lexical retriever ``options`` ask for: their BM25 parameters and RM3 feedback."""
        params, prf = options.retrieval.bm25, options.retrieval.prf
        texts = units["text"].to_list() if prf is not None or params is not None else None
        if params is not None and texts is not None:
            bm25 = bm25.reparametrized(params, texts)
        return cls(bm25, prf, texts)

    def search(self, query: Query, depth: int, rows: np.ndarray | None) -> Candidates:
        """The ``depth`` best BM25 rows among ``rows``."""
        if self.prf is None or self.texts is None:
            scores, found = self.bm25.search(query.text, depth, rows=rows)
            return Candidates.of(found, scores)
        weights = self._expansion(query.text, self.prf, self.texts, rows)
        if weights is None:
            return Candidates.empty()
        scores, found = self.bm25.top(self.bm25.weighted_scores(weights), depth, rows=rows)
        return Candidates.of(found, scores)

    def _expansion(
        self, text: str, prf: PRF, texts: Sequence[str], rows: np.ndarray | None
    ) -> dict[str, float] | None:
        """The RM3 query of ``text`` among ``rows`` (None: no first-pass hit), once per both."""
        last = self._expanded
        if last is not None and last[0] == text and last[1] is rows:
            return last[2]
        first, feedback = self.bm25.search(text, prf.fb_docs, rows=rows)
        weights = None
        if len(feedback):
            docs = [self.bm25.terms(texts[int(r)]) for r in feedback]
            weights = expand(self.bm25.terms(text), docs, first.tolist(), prf)
        self._expanded = (text, rows, weights)
        return weights
