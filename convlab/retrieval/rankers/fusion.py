"""Reciprocal rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence


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
