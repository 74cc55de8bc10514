"""Rankers: one file each, one signature ``(Candidates, RankContext) -> Candidates``.

Each registers its class in :data:`RANKERS` and is made from the search options by its
``from_options`` (:class:`RegisteredRanker`); :meth:`convlab.retrieval.SearchOptions.rankers`
resolves the names the options give (:attr:`~convlab.retrieval.SearchOptions.ranker_names`, in
search's fixed order) through :data:`RANKERS`. The pure functions behind them
(``recency_boost``, ``density_boost``, ``mmr``) and the conversation-first row selection
(:mod:`.hierarchical`) are exported too. Fusing views (hybrid search) is no ranker: it is
:mod:`convlab.fusion`, through :mod:`convlab.retrieval.fused`.
"""

from convlab.retrieval.rankers.base import RANKERS, RegisteredRanker
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
    "RegisteredRanker",
    "conversation_centroids",
    "density_boost",
    "mmr",
    "recency_boost",
    "top_conversations",
]
