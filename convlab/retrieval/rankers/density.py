"""Session density boost (at most 15%: rewards clusters of related results)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, ClassVar

import numpy as np
from msgspec import Meta

from convlab.config import check
from convlab.protocols import Candidates, RankContext
from convlab.retrieval.rankers.base import RANKERS

__all__ = ["Density", "density_boost"]


def density_boost(
    scores: np.ndarray, groups: Sequence[str], *, max_boost: float = 0.15
) -> np.ndarray:
    """``score * (1 + max_boost * min(1, (count - 1) / 3))`` where count = candidates in its group.

    A group (conversation) with one candidate gets nothing; 2 hits give 5%, 4 or more 15%.
    """
    counts = Counter(groups)
    factor = np.array([1.0 + max_boost * min(1.0, (counts[g] - 1) / 3) for g in groups])
    return np.asarray(scores, dtype=np.float64) * factor


@RANKERS.register("density")
@dataclass(frozen=True, slots=True)
class Density:
    """Boost docs whose conversation holds many of the candidate docs (:func:`density_boost`).

    ``score * (1 + max_boost * min(1, (docs of its conversation among the candidates - 1) / 3))``,
    then re-rank (ties keep their order). Runs on docs: after ``best_per_doc``.

    In the flat options: ``density = true`` and ``density_max``.

    Attributes:
        max_boost: the boost of a conversation with four or more candidate docs.
    """

    KEY: ClassVar[str] = "density"
    FORM: ClassVar[str] = "switch"
    STAGE: ClassVar[int] = 40

    max_boost: Annotated[float, Meta(ge=-1e6, le=1e6)] = field(
        default=0.15, metadata={"flat": "density_max"}
    )

    def __post_init__(self) -> None:
        check(self, "density")

    def __call__(self, candidates: Candidates, context: RankContext) -> Candidates:
        """The boosted docs, best first."""
        if candidates.docs is None:
            raise ValueError("the density ranker ranks docs: put it after best_per_doc")
        groups = [str(context.conversation_of_row[i]) for i in candidates.rows.tolist()]
        scores = density_boost(candidates.scores, groups, max_boost=self.max_boost)
        order = np.argsort(-scores, kind="stable")
        return candidates.rescored(scores).take(order)
