"""First-stage retrievers: dense (FAISS over unit vectors) and lexical (BM25 over unit texts).

Both satisfy :class:`convlab.protocols.Retriever`: ``search(query, depth, rows) -> Candidates``,
best first, restricted to ``rows`` of the units frame when given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from convlab.protocols import Candidates, Embedder, Query

if TYPE_CHECKING:
    from convlab.index import VectorIndex
    from convlab.index.bm25 import BM25Index

__all__ = ["DenseRetriever", "LexicalRetriever"]


class DenseRetriever:
    """Cosine similarity of the query vector to the unit vectors of a :class:`VectorIndex`.

    Args:
        index: the units and their vectors.
        embedder: the embedder the index was built with (it embeds the queries).
    """

    def __init__(self, index: VectorIndex, embedder: Embedder) -> None:
        self.index = index
        self.embedder = embedder

    def queries(self, texts: Sequence[str]) -> list[Query]:
        """The queries of a batch, embedded in one call."""
        if not texts:
            return []
        vectors = np.asarray(self.embedder.encode(list(texts)), dtype=np.float32)
        return [Query(t, v) for t, v in zip(texts, vectors, strict=True)]

    def search(self, query: Query, depth: int, rows: np.ndarray | None) -> Candidates:
        """The ``depth`` most similar units among ``rows`` (exact inside a subset)."""
        scores, found = self.index.search(query.vector[None, :], depth, rows=rows)
        keep = found[0] >= 0
        return Candidates.of(found[0][keep], scores[0][keep])


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
