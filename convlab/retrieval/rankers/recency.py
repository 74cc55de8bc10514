"""Recency boost (seeds/001: at most 20%, linear decay over 14 days)."""

from __future__ import annotations

from datetime import datetime

import numpy as np


def recency_boost(
    scores: np.ndarray,
    times: list[datetime | None],
    now: datetime,
    *,
    horizon_days: float = 14.0,
    max_boost: float = 0.20,
) -> np.ndarray:
    """``score * (1 + max_boost * max(0, 1 - age_days / horizon_days))``.

    seeds/001 shrinks a distance by ``(1 - 0.20 * ...)``; for similarities (higher is better) the
    same rule is a growth by ``(1 + 0.20 * ...)``. Undated items and items in the future of
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
