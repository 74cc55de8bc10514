"""Rankers: small pure functions over candidate frames, each optional, composed by search."""

from convlab.rankers.density import density_boost
from convlab.rankers.fusion import rrf
from convlab.rankers.hierarchical import conversation_centroids, top_conversations
from convlab.rankers.mmr import mmr
from convlab.rankers.recency import recency_boost

__all__ = [
    "conversation_centroids",
    "density_boost",
    "mmr",
    "recency_boost",
    "rrf",
    "top_conversations",
]
