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

if TYPE_CHECKING:
    from convlab.index import VectorIndex
    from convlab.index.bm25 import BM25Index

__all__ = ["DenseRetriever", "LexicalRetriever"]


class DenseRetriever:
    """Cosine similarity of the query vector to the unit vectors of a :class:`VectorIndex`.

    A search inside a subset of rows (a conversation scope, filters) is exact over that subset,
    as :meth:`VectorIndex.search` does it, with one difference of cost only: the subset's vectors
    are gathered once and kept while the next query searches the same ``rows`` array (the same
    object), so the queries of one conversation, searched one after the other, share one gather
    instead of copying the conversation's vectors per query. Each query's similarities are still
    its own matrix-vector product, so the scores are bit for bit those of the index's search.

    Args:
        index: the units and their vectors.
        embedder: the embedder the index was built with (it embeds the queries).
    """

    def __init__(self, index: VectorIndex, embedder: Embedder) -> None:
        self.index = index
        self.embedder = embedder
        self._rows: np.ndarray | None = None  # the subset whose vectors are held
        self._vectors = np.zeros((0, index.dimension), dtype=np.float32)

    def queries(self, texts: Sequence[str]) -> list[Query]:
        """The queries of a batch, embedded in one call."""
        if not texts:
            return []
        vectors = np.asarray(self.embedder.encode(list(texts)), dtype=np.float32)
        return [Query(t, v) for t, v in zip(texts, vectors, strict=True)]

    def search(self, query: Query, depth: int, rows: np.ndarray | None) -> Candidates:
        """The ``depth`` most similar units among ``rows`` (exact inside a subset)."""
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

    Args:
        bm25: a :class:`convlab.index.bm25.BM25Index` over the same units frame.
    """

    def __init__(self, bm25: BM25Index) -> None:
        self.bm25 = bm25

    def search(self, query: Query, depth: int, rows: np.ndarray | None) -> Candidates:
        """The ``depth`` best BM25 rows among ``rows``."""
        scores, found = self.bm25.search(query.text, depth, rows=rows)
        return Candidates.of(found, scores)
