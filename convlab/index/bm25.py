"""BM25 over the same units as the dense index (bm25s, Snowball-stemmed, English stopwords).

BM25 (Robertson & Zaragoza, 2009), bm25s's Lucene variant, by default with bm25s's defaults
k1=1.5, b=0.75 (:class:`BM25Params`):
``score(q, d) = sum_t idf(t) * tf(t,d) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl))`` with
``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))``.
On LoCoMo lexical search is a serious baseline, not a formality. A search may ask for other
parameters (:attr:`convlab.retrieval.RetrievalOptions.bm25`): :meth:`BM25Index.reparametrized`
indexes the same texts again with them, once per index and parameters.

bm25s and PyStemmer are the ``convlab-memory[index]`` extra, imported when an index is built or
loaded.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import numpy as np
import polars as pl
from msgspec import Meta

from convlab.config import check
from convlab.extras import require

if TYPE_CHECKING:
    import bm25s

__all__ = ["BM25Index", "BM25Params", "tokenize"]

_FEATURE = "BM25 (lexical and hybrid search)"


def _bm25s() -> ModuleType:
    """bm25s, imported without numba and scipy (the BM25 here needs neither).

    bm25s imports both when they are installed, at its own import (seconds: numba loads LLVM),
    for backends this index never asks for: it runs on bm25s's numpy backends (``backend`` and
    ``csc_backend`` left at their default, ``"numpy"``), with the same scores. A name bound to
    ``None`` in :data:`sys.modules` fails to import (the import system's rule, see the Python
    reference, "The module cache"), so bm25s finds them missing; the names are freed again at
    once, for any other code that imports them.
    """
    loaded = sys.modules.get("bm25s")
    if loaded is not None:  # None: marked missing (``require`` then names the extra)
        return loaded
    hidden = [name for name in ("numba", "scipy") if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        module = require("bm25s", "index", feature=_FEATURE)
    finally:
        for name in hidden:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]
    # bm25s sets its own logger to DEBUG: its "Building index" lines would reach any handler
    # (the MCP server's stderr); its warnings still do
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return module


@cache
def _stemmer() -> Any:
    """The English Snowball stemmer (PyStemmer), made once."""
    return require("Stemmer", "index", feature=_FEATURE).Stemmer("english")


def tokenize(texts: list[str]) -> list[list[str]]:
    """The tokens of each text as BM25 indexes them: Snowball-stemmed, English stopwords out."""
    return _bm25s().tokenize(
        texts, stopwords="en", stemmer=_stemmer(), show_progress=False, return_ids=False
    )


@dataclass(frozen=True, slots=True)
class BM25Params:
    """BM25's two parameters: term-frequency saturation ``k1`` and length normalisation ``b``.

    Attributes:
        k1: >= 0 (0: a term counts once however often it occurs).
        b: in [0, 1] (0: no length normalisation; 1: full).

    Raises:
        ValueError: a value out of its range.
    """

    KEY: ClassVar[str] = "bm25"
    FORM: ClassVar[str] = "table"

    k1: Annotated[float, Meta(ge=0.0, le=100.0)] = 1.5
    b: Annotated[float, Meta(ge=0.0, le=1.0)] = 0.75

    def __post_init__(self) -> None:
        check(self, "bm25")


class BM25Index:
    """BM25 over the ``text`` of a units frame; row i of the frame is document i.

    Attributes:
        params: the k1 and b its scores were computed with.
    """

    def __init__(self, retriever: bm25s.BM25, n: int) -> None:
        self.retriever = retriever
        self.n = n
        self.params = BM25Params(float(retriever.k1), float(retriever.b))
        self._variants: dict[BM25Params, BM25Index] = {}

    @classmethod
    def build(cls, units: pl.DataFrame, params: BM25Params | None = None) -> BM25Index:
        """Index the units' texts (with bm25s's defaults unless ``params`` are given)."""
        return cls.of_texts(units["text"].to_list(), params)

    @classmethod
    def of_texts(cls, texts: Sequence[str], params: BM25Params | None = None) -> BM25Index:
        """Index ``texts`` (document i is ``texts[i]``)."""
        lib = _bm25s()
        p = params or BM25Params()
        retriever = lib.BM25(k1=p.k1, b=p.b)
        tokens = lib.tokenize(list(texts), stopwords="en", stemmer=_stemmer(), show_progress=False)
        retriever.index(tokens, show_progress=False)
        return cls(retriever, len(texts))

    def reparametrized(self, params: BM25Params, texts: Sequence[str]) -> BM25Index:
        """This index's documents under ``params``: itself when they are its own.

        ``texts`` are the documents this index was built from, row for row (bm25s keeps scores,
        not term counts); the new index is made once per parameters and kept.

        Raises:
            ValueError: ``texts`` of another length than the index.
        """
        if params == self.params:
            return self
        if len(texts) != self.n:
            raise ValueError(f"BM25 over {self.n} documents given {len(texts)} texts")
        if params not in self._variants:
            self._variants[params] = BM25Index.of_texts(texts, params)
        return self._variants[params]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (0 where no query term occurs)."""
        vocab = self.retriever.vocab_dict
        terms = [t for t in tokenize([query])[0] if t in vocab]
        if not terms:
            return np.zeros(self.n, dtype=np.float32)
        return np.asarray(self.retriever.get_scores(terms), dtype=np.float32)

    def terms(self, text: str) -> list[str]:
        """The index's tokens of ``text`` (stemmed, stopwords out), as documents were tokenised."""
        return list(tokenize([text])[0])

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
