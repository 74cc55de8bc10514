"""Maximal marginal relevance (Carbonell & Goldstein, SIGIR 1998)."""

from __future__ import annotations

import numpy as np


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
