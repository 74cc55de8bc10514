"""Conversation-first retrieval: top conversations, then units inside them.

A conversation is represented by the centroid of its unit vectors (normalised mean) -- or by a
summary vector when one is given; the query picks the ``n`` conversations most similar to it
whose similarity is at least ``floor``, and the unit search runs inside those only.

This step is a row selection *before* retrieval, not a ranker: it narrows the rows a retriever
searches (``None`` stays "every row", so an approximate index is still searched as a whole when
nothing narrows it), whereas a :class:`convlab.protocols.Ranker` reorders candidates a retriever
already returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, ClassVar

import numpy as np
from msgspec import Meta

from convlab.config import check

__all__ = ["ConversationFirst", "conversation_centroids", "top_conversations"]


def conversation_centroids(
    vectors: np.ndarray, conversation_of_row: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(conversation ids, normalised centroids)`` from unit vectors and their conversations."""
    ids, inverse = np.unique(conversation_of_row, return_inverse=True)
    sums = np.zeros((len(ids), vectors.shape[1]), dtype=np.float64)
    np.add.at(sums, inverse, vectors)
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return ids, (sums / np.maximum(norms, 1e-12)).astype(np.float32)


def top_conversations(
    query: np.ndarray, ids: np.ndarray, centroids: np.ndarray, n: int, floor: float
) -> list[str]:
    """The ``n`` conversations most similar to ``query`` with similarity >= ``floor``."""
    sims = centroids @ np.asarray(query, dtype=np.float32).reshape(-1)
    order = np.argsort(-sims, kind="stable")[:n]
    return [str(ids[i]) for i in order if sims[i] >= floor]


@dataclass(frozen=True, slots=True)
class ConversationFirst:
    """Pick the conversations a query searches: ``cos(query, centroid(c)) >= floor``, top ``n``.

    In the flat options: ``hierarchical = true``, ``top_conversations`` and
    ``conversation_floor`` (:attr:`convlab.retrieval.options.RetrievalOptions.hierarchical`).

    Attributes:
        n: at most this many conversations.
        floor: the least cosine similarity of a conversation's centroid to the query.
    """

    KEY: ClassVar[str] = "hierarchical"
    FORM: ClassVar[str] = "switch"

    n: Annotated[int, Meta(ge=1, le=10_000)] = field(
        default=3, metadata={"flat": "top_conversations"}
    )
    floor: Annotated[float, Meta(ge=-1e6, le=1e6)] = field(
        default=0.2, metadata={"flat": "conversation_floor"}
    )

    def __post_init__(self) -> None:
        check(self, "hierarchical")

    def select(
        self,
        query: np.ndarray,
        centroids: tuple[np.ndarray, np.ndarray],
        allowed: tuple[str, ...] | None,
    ) -> tuple[str, ...]:
        """The chosen conversation ids, best first, among ``allowed`` (None: every one)."""
        ids, cents = centroids
        wanted = None if allowed is None else set(allowed)
        keep = [c for c in ids if wanted is None or c in wanted]
        sel = np.isin(ids, keep)
        return tuple(top_conversations(query, ids[sel], cents[sel], self.n, self.floor))
