"""Maximal marginal relevance (Carbonell & Goldstein, SIGIR 1998)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from convlab.protocols import Candidates, RankContext
from convlab.retrieval.rankers.base import RANKERS

__all__ = ["MMR", "min_max", "mmr", "mmr_values"]


def min_max(scores: np.ndarray) -> np.ndarray:
    """``(s - min) / (max - min)``, all 1 when every score is equal (Lee, SIGIR 1997).

    Example:
        >>> min_max(np.array([0.03, 0.02, 0.01])).tolist()
        [1.0, 0.5, 0.0]
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0:
        return s
    lo, hi = s.min(), s.max()
    return (s - lo) / (hi - lo) if hi > lo else np.ones_like(s)


def mmr_values(
    relevance: np.ndarray, vectors: np.ndarray, k: int, lam: float = 0.7
) -> tuple[list[int], list[float]]:
    """Greedy MMR: pick ``argmax lam * rel(d) - (1 - lam) * max_{s in S} sim(d, s)``.

    Args:
        relevance: relevance of each candidate to the query, on the scale the caller chose
            (:class:`MMR` gives min-max normalised scores, so ``lam`` weighs the same for
            cosine, BM25 and RRF scores).
        vectors: normalised candidate vectors (for the redundancy term).
        k: how many to pick.
        lam: 1 = pure relevance, 0 = pure diversity.

    Returns:
        Candidate positions in pick order, and the value each had when picked. The values never
        rise: a candidate's redundancy only grows as picks are added.
    """
    if not 0.0 <= lam <= 1.0:
        raise ValueError("lambda must be in [0, 1]")
    n = len(relevance)
    chosen: list[int] = []
    values: list[float] = []
    if n == 0:
        return chosen, values
    rel = np.asarray(relevance, dtype=np.float64)
    sims = vectors @ vectors.T
    left = list(range(n))
    while left and len(chosen) < k:
        red = sims[np.ix_(left, chosen)].max(axis=1) if chosen else np.zeros(len(left))
        value = lam * rel[left] - (1 - lam) * red
        at = int(np.argmax(value))
        chosen.append(left[at])
        values.append(float(value[at]))
        left.remove(left[at])
    return chosen, values


def mmr(relevance: np.ndarray, vectors: np.ndarray, k: int, lam: float = 0.7) -> list[int]:
    """Greedy MMR's pick order (:func:`mmr_values` without the values).

    Example:
        >>> v = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
        >>> mmr(np.array([0.9, 0.8, 0.5]), v, 3, lam=0.5)  # the duplicate of 0 comes last
        [0, 2, 1]
    """
    return mmr_values(relevance, vectors, k, lam)[0]


@RANKERS.register("mmr")
@dataclass(frozen=True, slots=True)
class MMR:
    """Diversify the top docs by :func:`mmr_values` over their best units' vectors.

    From the first ``max(5 k, 50)`` candidates, pick ``k`` greedily by
    ``lam * rel(d) - (1 - lam) * max over picked s of cos(d, s)``, where ``rel`` is the
    candidates' score min-max normalised over that pool (:func:`min_max`): the best candidate
    has relevance 1 and the last 0 whatever the score (cosine, BM25, RRF), so the relevance and
    the cosine redundancy are on one scale and ``lam`` means the same in every mode. The docs
    come back scored by their MMR value when picked, which never rises with rank. Carbonell &
    Goldstein, "The use of MMR, diversity-based reranking for reordering documents and
    producing summaries", SIGIR 1998.

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
        vectors = np.asarray(context.index.vectors(pool.rows), dtype=np.float64)
        pick, values = mmr_values(min_max(pool.scores), vectors, context.k, self.lam)
        return pool.take(pick).rescored(np.asarray(values))
