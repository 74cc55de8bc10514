"""Session-first retrieval: a doc's score mixed with its session's, or docs of the top sessions.

A session (:func:`convlab.schema.session_id`: a conversation's messages of one UTC day; exactly
LoCoMo's ``session_N`` and LongMemEval's sessions) is scored by its best doc among the
candidates, ``S(g) = max_{d in g} s(d)`` (the session's units' best score). Each doc's score
becomes

``s'(d) = (1 - weight) * s(d) + weight * S(g(d))``

(``weight`` 0: unchanged; 1: the session's score alone, its docs tied in their first order),
and with ``top`` only the docs of the ``top`` best sessions (by ``S``, ties by first
appearance) are kept: sessions first, then docs within them (Lewis and Ng style hierarchical
retrieval; LongMemEval's session-then-turn index, Wu et al. 2025, section 5).
The ``session`` doc ranker applies it (:class:`convlab.retrieval.rankers.session.Session`, its
own config); off by default; its settings are fixed in advance or chosen by grouped
cross-validation, never on test queries.

Example:
    >>> scores, keep = session_first([0.9, 0.8, 0.7], ["a", "b", "a"], weight=0.5, top=None)
    >>> [round(float(s), 2) for s in scores], keep.tolist()
    ([0.9, 0.8, 0.8], [0, 1, 2])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["session_first"]


def session_first(
    scores: Sequence[float] | np.ndarray,
    sessions: Sequence[str],
    *,
    weight: float,
    top: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The mixed scores of every candidate, and the positions kept, best first.

    Args:
        scores: the candidates' scores, in rank order.
        sessions: each candidate's session.
        weight: the session score's share (see the module).
        top: keep the docs of this many best sessions (None: all).

    Returns:
        ``(mixed, keep)``: ``mixed[i]`` is candidate i's new score; ``keep`` the positions of
        the kept candidates ordered by ``mixed``, descending (ties keep their first order).
    """
    s = np.asarray(scores, dtype=np.float64)
    best: dict[str, float] = {}
    for g, v in zip(sessions, s.tolist(), strict=True):
        best[g] = max(best.get(g, -np.inf), v)
    session_score = np.array([best[g] for g in sessions], dtype=np.float64)
    mixed = (1.0 - weight) * s + weight * session_score
    keep = np.arange(len(s))
    if top is not None:
        ranked = sorted(best, key=lambda g: -best[g])[:top]  # stable: first appearance wins ties
        chosen = set(ranked)
        keep = np.array([i for i, g in enumerate(sessions) if g in chosen], dtype=np.int64)
    order = np.argsort(-mixed[keep], kind="stable")
    return mixed, keep[order]
