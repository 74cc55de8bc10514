"""Recency boost (at most 20%, linear decay over 14 days)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, ClassVar

import numpy as np
from msgspec import Meta

from convlab.config import check
from convlab.protocols import Candidates, RankContext
from convlab.retrieval.rankers.base import RANKERS

__all__ = ["Recency", "recency_boost"]


def recency_boost(
    scores: np.ndarray,
    times: list[datetime | None],
    now: datetime,
    *,
    horizon_days: float = 14.0,
    max_boost: float = 0.20,
) -> np.ndarray:
    """``score * (1 + max_boost * max(0, 1 - age_days / horizon_days))``.

    Stated for distances, the rule shrinks one by ``(1 - 0.20 * ...)``; for similarities (higher
    is better) it is a growth by ``(1 + 0.20 * ...)``. Undated items and items in the future of
    ``now`` get no boost beyond age 0's. ``now`` defaults, in search, to the newest timestamp in
    the index, so evaluations are reproducible.
    """
    out = np.asarray(scores, dtype=np.float64).copy()
    for i, t in enumerate(times):
        if t is None:
            continue
        age = max(0.0, (now - t).total_seconds() / 86400.0)
        out[i] *= 1.0 + max_boost * max(0.0, 1.0 - age / horizon_days)
    return out


@RANKERS.register("recency")
@dataclass(frozen=True, slots=True)
class Recency:
    """Boost each candidate by its unit's age (:func:`recency_boost`), then re-rank.

    ``score * (1 + max_boost * max(0, 1 - age_days / horizon_days))``, age measured from
    ``context.now`` (nothing changes when it is None: no unit is dated).

    In the flat options: ``recency = true``, ``recency_days`` and ``recency_max``.

    Attributes:
        horizon_days: the age at which the boost reaches 0.
        max_boost: the boost of a unit of age 0.
    """

    KEY: ClassVar[str] = "recency"
    FORM: ClassVar[str] = "switch"
    STAGE: ClassVar[int] = 30

    horizon_days: Annotated[float, Meta(gt=0.0, le=1e6)] = field(
        default=14.0, metadata={"flat": "recency_days"}
    )
    max_boost: Annotated[float, Meta(ge=-1e6, le=1e6)] = field(
        default=0.20, metadata={"flat": "recency_max"}
    )

    def __post_init__(self) -> None:
        check(self, "recency")

    def __call__(self, candidates: Candidates, context: RankContext) -> Candidates:
        """The boosted candidates, best first (ties keep their order)."""
        if context.now is None:
            return candidates
        scores = recency_boost(
            candidates.scores,
            [context.times[i] for i in candidates.rows.tolist()],
            context.now,
            horizon_days=self.horizon_days,
            max_boost=self.max_boost,
        )
        order = np.argsort(-scores, kind="stable")
        return candidates.rescored(scores).take(order)
