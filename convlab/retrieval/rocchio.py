"""Rocchio pseudo-relevance feedback in the dense space (Rocchio, 1971; no negatives).

The query vector ``q`` is searched once; its ``fb_docs`` best units are taken as relevant, and
the second pass searches

``q' = (alpha * q + beta * mean(v_1 .. v_n)) / ||alpha * q + beta * mean(v_1 .. v_n)||``,

with ``v_i`` the feedback units' stored (unit-norm) vectors, so its scores are cosines again.
The starting values 10 units, alpha 1.0, beta 0.75 are the textbook ones (Manning, Raghavan
& Schuetze, 2008, ch. 9), fixed before any run.

Example:
    >>> import numpy as np
    >>> moved(np.array([1.0, 0.0]), np.array([[0.0, 1.0]]), Rocchio(alpha=1.0, beta=1.0))
    array([0.70710677, 0.70710677], dtype=float32)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar

import numpy as np
from msgspec import Meta

from convlab.config import check

__all__ = ["Rocchio", "moved"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Rocchio:
    """Rocchio feedback for the dense views: ``rocchio = {...}`` in the options.

    Attributes:
        fb_docs: first-pass units taken as relevant (1 to 1,000).
        alpha: the original query's weight, in [0, 100].
        beta: the feedback centroid's weight, in [0, 100]; alpha + beta must be positive.

    Raises:
        ValueError: a value out of its range.
    """

    KEY: ClassVar[str] = "rocchio"
    FORM: ClassVar[str] = "table"

    fb_docs: Annotated[int, Meta(ge=1, le=1000)] = 10
    alpha: Annotated[float, Meta(ge=0.0, le=100.0)] = 1.0
    beta: Annotated[float, Meta(ge=0.0, le=100.0)] = 0.75

    def __post_init__(self) -> None:
        check(self, "rocchio")
        if self.alpha + self.beta <= 0:
            raise ValueError("rocchio: alpha and beta cannot both be 0")


def moved(query: np.ndarray, feedback: np.ndarray, rocchio: Rocchio) -> np.ndarray:
    """The second-pass query: ``alpha * query + beta * mean(feedback)``, L2-normalised (float32).

    Args:
        query: the query vector (d,).
        feedback: the feedback units' vectors (n, d); none: the query itself.
        rocchio: the weights alpha and beta.
    """
    q = np.asarray(query, dtype=np.float64)
    if len(feedback) == 0:
        return np.asarray(query, dtype=np.float32)
    new = rocchio.alpha * q + rocchio.beta * np.asarray(feedback, dtype=np.float64).mean(axis=0)
    norm = float(np.linalg.norm(new))
    return np.asarray(new / norm if norm > 0 else q, dtype=np.float32)
