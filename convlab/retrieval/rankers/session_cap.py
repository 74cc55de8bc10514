"""Diversity across sessions: at most ``cap`` docs of one session before any doc beyond it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, ClassVar

import numpy as np
from msgspec import Meta

from convlab.config import check
from convlab.protocols import Candidates, RankContext
from convlab.retrieval.rankers.base import RANKERS

__all__ = ["SessionCap", "session_keys", "sessions_capped"]


def session_keys(conversations: Sequence[str], times: Sequence[datetime | None]) -> list[str]:
    """Each row's session: its conversation and the UTC day of its time.

    A LongMemEval session and a coding session are each a conversation; a LoCoMo conversation
    holds dated sessions, one a day, whose messages carry the session's time. The units keep no
    session number, so a session is a conversation's day (an undated row: its conversation).

    Example:
        >>> from datetime import UTC
        >>> session_keys(["c", "c"], [datetime(2023, 5, 8, 13, tzinfo=UTC), None])
        ['c@2023-05-08', 'c']
    """
    return [
        c if t is None else f"{c}@{t.date().isoformat()}"
        for c, t in zip(conversations, times, strict=True)
    ]


def sessions_capped(sessions: Sequence[str], cap: int) -> np.ndarray:
    """Positions in the new order: each session's first ``cap`` items, then the others.

    Both tiers keep the order they had (a stable partition).

    Example:
        >>> sessions_capped(["a", "a", "a", "b", "a"], 2).tolist()
        [0, 1, 3, 2, 4]
    """
    seen: dict[str, int] = {}
    first: list[int] = []
    rest: list[int] = []
    for i, s in enumerate(sessions):
        seen[s] = seen.get(s, 0) + 1
        (first if seen[s] <= cap else rest).append(i)
    return np.asarray(first + rest, dtype=np.int64)


@RANKERS.register("session_cap")
@dataclass(frozen=True, slots=True)
class SessionCap:
    """Diversify across sessions: a session's docs beyond its first ``cap`` go after the others.

    A stable partition of the candidates (:func:`sessions_capped` over :func:`session_keys`):
    nothing is dropped, and each tier keeps its order. The demoted docs are rescored below the
    last kept one, keeping their gaps (``score - (max demoted - min kept) - 1e-9``), so scores
    still fall with rank and a fusion that normalises them sees the new order.

    In the flat options: ``session_cap = CAP``.

    Attributes:
        cap: the docs one session may place before the demoted tier.
    """

    KEY: ClassVar[str] = "session_cap"
    FORM: ClassVar[str] = "value"
    STAGE: ClassVar[int] = 50

    cap: Annotated[int, Meta(ge=1, le=10_000)] = 2

    def __post_init__(self) -> None:
        check(self, "session_cap")

    def __call__(self, candidates: Candidates, context: RankContext) -> Candidates:
        """The candidates, each session's first ``cap`` first."""
        rows = candidates.rows.tolist()
        keys = session_keys(
            [str(context.conversation_of_row[i]) for i in rows], [context.times[i] for i in rows]
        )
        order = sessions_capped(keys, self.cap)
        n_first = sum(min(n, self.cap) for n in Counter(keys).values())
        out = candidates.take(order)
        if n_first == len(out):
            return out
        scores = out.scores.copy()
        kept, demoted = scores[:n_first], scores[n_first:]
        scores[n_first:] = demoted - (demoted.max() - kept.min()) - 1e-9
        return out.rescored(scores)
