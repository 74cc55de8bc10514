"""Rankers: one file each, one signature ``(Candidates, RankContext) -> Candidates``.

Each registers its factory in :data:`RANKERS`; :meth:`convlab.retrieval.SearchOptions.rankers`
composes the doc rankers in search's fixed order. The pure functions behind them
(``recency_boost``, ``density_boost``, ``mmr``) and the conversation-first row selection
(:mod:`.hierarchical`) are exported too. Fusing views (hybrid search) is no ranker: it is
:mod:`convlab.fusion`, through :mod:`convlab.retrieval.fused`.
"""

from convlab.retrieval.rankers.base import RANKERS
from convlab.retrieval.rankers.best_per_doc import BestPerDoc
from convlab.retrieval.rankers.density import Density, density_boost
from convlab.retrieval.rankers.hierarchical import (
    ConversationFirst,
    conversation_centroids,
    top_conversations,
)
from convlab.retrieval.rankers.mmr import MMR, mmr
from convlab.retrieval.rankers.recency import Recency, recency_boost

__all__ = [
    "MMR",
    "RANKERS",
    "BestPerDoc",
    "ConversationFirst",
    "Density",
    "Recency",
    "conversation_centroids",
    "density_boost",
    "mmr",
    "recency_boost",
    "top_conversations",
]
