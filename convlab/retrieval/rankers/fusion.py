"""Reciprocal rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from convlab.protocols import Candidates, RankContext
from convlab.retrieval.rankers.base import RANKERS

__all__ = ["RRF", "rrf"]


def rrf(rankings: Sequence[Sequence[Hashable]], k: int = 60) -> dict[Hashable, float]:
    """Fuse rankings: ``score(d) = sum over rankings r of 1 / (k + rank_r(d))``, rank from 1.

    Example:
        >>> rrf([["a", "b"], ["b", "c"]])["b"] == 1 / 62 + 1 / 61
        True
    """
    out: dict[Hashable, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, start=1):
            out[doc] = out.get(doc, 0.0) + 1.0 / (k + rank)
    return out


@RANKERS.register("rrf")
@dataclass(frozen=True, slots=True)
class RRF:
    """Fuse the candidates with ``context.fused`` (BM25's, in hybrid search) by :func:`rrf`.

    ``score(row) = sum over rankings r of 1 / (k + rank_r(row))``; the rows come back best
    first, rows of equal fused score in the order they were first seen (the candidates' first).
    Cormack, Clarke & Buettcher, "Reciprocal rank fusion outperforms Condorcet and individual
    rank learning methods", SIGIR 2009 (``k`` = 60 there).

    Attributes:
        k: the RRF constant.
    """

    k: int = 60

    def __call__(self, candidates: Candidates, context: RankContext) -> Candidates:
        """The fused candidates."""
        rankings = [candidates.rows, *(c.rows for c in context.fused)]
        every = np.concatenate(rankings)
        if every.size == 0:
            return Candidates.empty()
        # what :func:`rrf` does, in numpy: the rows in the order they were first seen, each
        # row's terms summed in the order of the rankings (bincount adds its weights in order)
        share = np.concatenate([1.0 / (self.k + np.arange(1, len(r) + 1)) for r in rankings])
        seen, first, slot = np.unique(every, return_index=True, return_inverse=True)
        sums = np.bincount(slot, weights=share, minlength=seen.size)
        by_first = np.argsort(first, kind="stable")
        rows, scores = seen[by_first], sums[by_first]
        order = np.argsort(-scores, kind="stable")
        return Candidates(rows[order], scores[order])
