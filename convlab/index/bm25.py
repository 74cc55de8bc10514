"""BM25 over the same units as the dense index (bm25s, Snowball-stemmed, English stopwords).

BM25 (Robertson & Zaragoza, 2009) with bm25s's defaults (Lucene variant, k1=1.5, b=0.75):
``score(q, d) = sum_t idf(t) * tf(t,d) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl))`` with
``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))``.
On LoCoMo lexical search is a serious baseline, not a formality.

bm25s and PyStemmer are the ``convlab-memory[index]`` extra, imported when an index is built or
loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from convlab.extras import require

if TYPE_CHECKING:
    import bm25s

__all__ = ["BM25Index"]

_FEATURE = "BM25 (lexical and hybrid search)"


def _bm25s() -> ModuleType:
    return require("bm25s", "index", feature=_FEATURE)


@cache
def _stemmer() -> Any:
    """The English Snowball stemmer (PyStemmer), made once."""
    return require("Stemmer", "index", feature=_FEATURE).Stemmer("english")


def _tokenize(texts: list[str]) -> list[list[str]]:
    return _bm25s().tokenize(
        texts, stopwords="en", stemmer=_stemmer(), show_progress=False, return_ids=False
    )


class BM25Index:
    """BM25 over the ``text`` of a units frame; row i of the frame is document i."""

    def __init__(self, retriever: bm25s.BM25, n: int) -> None:
        self.retriever = retriever
        self.n = n

    @classmethod
    def build(cls, units: pl.DataFrame) -> BM25Index:
        """Index the units' texts."""
        lib = _bm25s()
        retriever = lib.BM25()
        texts = units["text"].to_list()
        tokens = lib.tokenize(texts, stopwords="en", stemmer=_stemmer(), show_progress=False)
        retriever.index(tokens, show_progress=False)
        return cls(retriever, len(texts))

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (0 where no query term occurs)."""
        vocab = self.retriever.vocab_dict
        terms = [t for t in _tokenize([query])[0] if t in vocab]
        if not terms:
            return np.zeros(self.n, dtype=np.float32)
        return np.asarray(self.retriever.get_scores(terms), dtype=np.float32)

    def terms(self, text: str) -> list[str]:
        """The index's tokens of ``text`` (stemmed, stopwords out), as documents were tokenised."""
        return list(_tokenize([text])[0])

    def weighted_scores(self, weights: Mapping[str, float]) -> np.ndarray:
        """``sum_t weights[t] * bm25(t, d)`` for every document (terms not indexed count 0).

        bm25s scores a bag of tokens only, so the weighted query is scored on its matrix of
        precomputed per-term scores (``scores``: CSC, one column of documents per token id).
        """
        out = np.zeros(self.n, dtype=np.float32)
        m = self.retriever.scores
        vocab = self.retriever.vocab_dict
        for term, weight in weights.items():
            if term in vocab and weight:
                tid = vocab[term]
                lo, hi = m["indptr"][tid], m["indptr"][tid + 1]
                np.add.at(out, m["indices"][lo:hi], np.float32(weight) * m["data"][lo:hi])
        return out

    def search(
        self, query: str, k: int, *, rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` (scores, rows) among ``rows`` (all by default); zero scores left out."""
        return self.top(self.scores(query), k, rows=rows)

    def top(
        self, s: np.ndarray, k: int, *, rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` (scores, rows) of the scores ``s`` among ``rows``; zero scores left out."""
        cand = np.arange(self.n) if rows is None else np.asarray(rows, dtype=np.int64)
        sc = s[cand]
        keep = sc > 0
        cand, sc = cand[keep], sc[keep]
        order = np.argsort(-sc, kind="stable")[:k]
        return sc[order], cand[order]

    def save(self, directory: str | Path) -> None:
        """Save with bm25s's own numpy/json format (no pickle)."""
        self.retriever.save(str(directory), allow_pickle=False, show_progress=False)

    @classmethod
    def load(cls, directory: str | Path) -> BM25Index:
        """Load what :meth:`save` wrote."""
        r = _bm25s().BM25.load(str(directory), allow_pickle=False)
        return cls(r, int(r.scores["num_docs"]))
