"""Maximal marginal relevance (Carbonell & Goldstein, SIGIR 1998)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from convlab.protocols import Candidates, RankContext
from convlab.retrieval.rankers.base import RANKERS

__all__ = ["MMR", "mmr"]


def mmr(relevance: np.ndarray, vectors: np.ndarray, k: int, lam: float = 0.7) -> list[int]:
    """Greedy MMR: pick ``argmax lam * rel(d) - (1 - lam) * max_{s in S} sim(d, s)``.

    Args:
        relevance: relevance of each candidate to the query (cosine or a fused score).
        vectors: normalised candidate vectors (for the redundancy term).
        k: how many to pick.
        lam: 1 = pure relevance, 0 = pure diversity.

    Returns:
        Candidate positions in pick order.
    """
    if not 0.0 <= lam <= 1.0:
        raise ValueError("lambda must be in [0, 1]")
    n = len(relevance)
    chosen: list[int] = []
    if n == 0:
        return chosen
    sims = vectors @ vectors.T
    left = list(range(n))
    while left and len(chosen) < k:
        red = sims[np.ix_(left, chosen)].max(axis=1) if chosen else np.zeros(len(left))
        value = lam * np.asarray(relevance)[left] - (1 - lam) * red
        best = left[int(np.argmax(value))]
        chosen.append(best)
        left.remove(best)
    return chosen


@RANKERS.register("mmr")
@dataclass(frozen=True, slots=True)
class MMR:
    """Diversify the top docs by :func:`mmr` over their best units' vectors.

    From the first ``max(5 k, 50)`` candidates, pick ``k`` greedily by
    ``lam * score(d) - (1 - lam) * max over picked s of cos(d, s)``. Carbonell & Goldstein, "The
    use of MMR, diversity-based reranking for reordering documents and producing summaries",
    SIGIR 1998.

    Attributes:
        lam: 1 = pure relevance, 0 = pure diversity.
    """

    lam: float = 0.7

    def __post_init__(self) -> None:
        if not 0.0 <= self.lam <= 1.0:
            raise ValueError("mmr lambda must be in [0, 1]")

    def __call__(self, candidates: Candidates, context: RankContext) -> Candidates:
        """At most ``context.k`` candidates in pick order."""
        if len(candidates) == 0:
            return candidates
        pool = candidates.take(slice(0, max(context.k * 5, 50)))
        pick = mmr(pool.scores, context.index.vectors(pool.rows), context.k, self.lam)
        return pool.take(pick)
