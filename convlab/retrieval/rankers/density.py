"""Session density boost (seeds/001: at most 15%, rewards clusters of related results)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np


def density_boost(
    scores: np.ndarray, groups: Sequence[str], *, max_boost: float = 0.15
) -> np.ndarray:
    """``score * (1 + max_boost * min(1, (count - 1) / 3))`` where count = candidates in its group.

    A group (conversation) with one candidate gets nothing; 2 hits give 5%, 4 or more 15%.
    """
    counts = Counter(groups)
    factor = np.array([1.0 + max_boost * min(1.0, (counts[g] - 1) / 3) for g in groups])
    return np.asarray(scores, dtype=np.float64) * factor
