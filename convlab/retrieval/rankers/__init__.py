"""Rankers: one file each, one signature ``(Candidates, RankContext) -> Candidates``.

Each registers its class in :data:`RANKERS`; the class is the ranker's config too (its fields,
their bounds, and how the flat options write it: :class:`RegisteredRanker`), so the search
options hold the rankers themselves (:attr:`~convlab.retrieval.SearchOptions.rankers`, by
stage) and :func:`configs` lists the classes an options table may name. The pure functions
behind them (``recency_boost``, ``density_boost``, ``mmr``, ``time_boost``,
``sessions_capped``) and the conversation-first row selection
(:mod:`.hierarchical`) are exported too. Fusing views (hybrid search) is no ranker: it is
:mod:`convlab.fusion`, through :mod:`convlab.retrieval.fused`.
"""

from __future__ import annotations

from convlab.retrieval.rankers.base import RANKERS, RegisteredRanker, configs
from convlab.retrieval.rankers.best_per_doc import BestPerDoc
from convlab.retrieval.rankers.density import Density, density_boost
from convlab.retrieval.rankers.hierarchical import (
    ConversationFirst,
    conversation_centroids,
    top_conversations,
)
from convlab.retrieval.rankers.mmr import MMR, mmr
from convlab.retrieval.rankers.recency import Recency, recency_boost
from convlab.retrieval.rankers.session import Session
from convlab.retrieval.rankers.session_cap import SessionCap, sessions_capped
from convlab.retrieval.rankers.temporal import TimeBoost, time_boost

__all__ = [
    "MMR",
    "RANKERS",
    "BestPerDoc",
    "ConversationFirst",
    "Density",
    "Recency",
    "RegisteredRanker",
    "Session",
    "SessionCap",
    "TimeBoost",
    "configs",
    "conversation_centroids",
    "density_boost",
    "mmr",
    "recency_boost",
    "sessions_capped",
    "time_boost",
    "top_conversations",
]
