"""Conversation-first retrieval (seeds/004): top conversations, then units inside them.

A conversation is represented by the centroid of its unit vectors (normalised mean) -- or by a
summary vector when one is given; the query picks the ``n`` conversations most similar to it
whose similarity is at least ``floor``, and the unit search runs inside those only.
"""

from __future__ import annotations

import numpy as np


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
