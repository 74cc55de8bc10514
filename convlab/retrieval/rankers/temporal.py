"""The time boost: docs inside the times a question names move up (temporal questions).

The windows are read by :mod:`convlab.retrieval.temporal`; this ranker is their config and boost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, ClassVar

import numpy as np
from msgspec import Meta

from convlab.config import check
from convlab.protocols import Candidates, RankContext
from convlab.retrieval.rankers.base import RANKERS
from convlab.retrieval.temporal import Window, time_windows

__all__ = ["TimeBoost", "time_boost"]


def time_boost(
    scores: np.ndarray,
    times: Sequence[datetime | None],
    windows: Sequence[Window],
    *,
    boost: float,
    slack_days: float = 0.0,
) -> np.ndarray:
    """``score + boost * |score|`` where a time falls in a window widened by ``slack_days``.

    Undated items, and every item when there is no window, keep their score.

    Example:
        >>> from datetime import UTC
        >>> w = [(datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 6, 1, tzinfo=UTC))]
        >>> t = [datetime(2023, 5, 9, tzinfo=UTC), datetime(2023, 6, 3, tzinfo=UTC), None]
        >>> time_boost(np.array([2.0, 3.0, 4.0]), t, w, boost=1.0).tolist()
        [4.0, 3.0, 4.0]
        >>> time_boost(np.array([2.0, 3.0, 4.0]), t, w, boost=1.0, slack_days=3).tolist()
        [4.0, 6.0, 4.0]
    """
    out = np.asarray(scores, dtype=np.float64).copy()
    if not windows:
        return out
    slack = timedelta(days=slack_days)
    wide = [(a - slack, b + slack) for a, b in windows]
    inside = np.array(
        [t is not None and any(a <= t < b for a, b in wide) for t in times], dtype=bool
    )
    out[inside] += boost * np.abs(out[inside])
    return out


@RANKERS.register("temporal")
@dataclass(frozen=True, slots=True)
class TimeBoost:
    """Boost the docs whose unit's time falls inside a time the query names, then re-rank.

    The windows are read from the query's text (:func:`convlab.retrieval.temporal.time_windows`)
    against ``context.anchor``: the query's own time, else the latest message time in its
    scope. A query that names no time is left as it is.

    In the flat options: ``temporal = {boost = ..., slack_days = ...}``.

    Attributes:
        boost: a doc inside a window gets ``score + boost * |score|`` (:func:`time_boost`; 0
            to 1,000: a large boost is a filter that keeps the order of the rest).
        slack_days: each window widened by this many days on each side (0 to 3,650): people
            speak of an event in the days after it, or plan it before.
    """

    KEY: ClassVar[str] = "temporal"
    FORM: ClassVar[str] = "table"
    STAGE: ClassVar[int] = 20

    boost: Annotated[float, Meta(ge=0.0, le=1000.0)] = 1.0
    slack_days: Annotated[float, Meta(ge=0.0, le=3650.0)] = 0.0

    def __post_init__(self) -> None:
        check(self, "temporal")

    def __call__(self, candidates: Candidates, context: RankContext) -> Candidates:
        """The boosted candidates, best first (ties keep their order)."""
        windows = time_windows(context.query.text, context.anchor)
        if not windows or len(candidates) == 0:
            return candidates
        scores = time_boost(
            candidates.scores,
            [context.times[i] for i in candidates.rows.tolist()],
            windows,
            boost=self.boost,
            slack_days=self.slack_days,
        )
        order = np.argsort(-scores, kind="stable")
        return candidates.rescored(scores).take(order)
