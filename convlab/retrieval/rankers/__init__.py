"""Rankers: small pure functions over candidate frames, each optional, composed by search."""

from convlab.retrieval.rankers.density import density_boost
from convlab.retrieval.rankers.fusion import rrf
from convlab.retrieval.rankers.hierarchical import conversation_centroids, top_conversations
from convlab.retrieval.rankers.mmr import mmr
from convlab.retrieval.rankers.recency import recency_boost

__all__ = [
    "conversation_centroids",
    "density_boost",
    "mmr",
    "recency_boost",
    "rrf",
    "top_conversations",
]
