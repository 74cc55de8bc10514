"""The ``k`` best of one query's similarities, written into padded result rows."""

from __future__ import annotations

import numpy as np

__all__ = ["top_into"]


def top_into(
    sims: np.ndarray, k: int, subset: np.ndarray | None, scores: np.ndarray, ids: np.ndarray
) -> None:
    """Write the ``k`` best of one query's similarities into ``scores`` / ``ids`` (padded rows).

    ``subset`` maps positions in ``sims`` to row numbers (None: positions are rows). Ties keep
    the lower position first.

    Example:
        >>> scores, ids = np.full(3, -np.inf, dtype=np.float32), np.full(3, -1)
        >>> top_into(np.array([0.1, 0.9], dtype=np.float32), 3, np.array([7, 4]), scores, ids)
        >>> ids.tolist()
        [4, 7, -1]
    """
    kk = min(k, sims.shape[0])
    top = np.argpartition(-sims, kk - 1)[:kk] if kk < sims.shape[0] else np.arange(kk)
    top = top[np.argsort(-sims[top], kind="stable")]
    scores[:kk] = sims[top]
    ids[:kk] = top if subset is None else subset[top]
