"""Rankers: one file each, one signature ``(Candidates, RankContext) -> Candidates``.

Each registers its class in :data:`RANKERS` and is made from the search options by its
``from_options`` (:class:`RegisteredRanker`); :func:`doc_rankers` resolves the names the
options give (:attr:`~convlab.retrieval.SearchOptions.ranker_names`, in
search's fixed order) through :data:`RANKERS`. The pure functions behind them
(``recency_boost``, ``density_boost``, ``mmr``, ``time_boost``, ``sessions_capped``) and the
conversation-first row selection
(:mod:`.hierarchical`) are exported too. Fusing views (hybrid search) is no ranker: it is
:mod:`convlab.fusion`, through :mod:`convlab.retrieval.fused`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
from convlab.retrieval.rankers.session import Session
from convlab.retrieval.rankers.session_cap import SessionCap, sessions_capped
from convlab.retrieval.rankers.temporal import TimeBoost, time_boost

if TYPE_CHECKING:
    from convlab.protocols import Ranker
    from convlab.retrieval.options import SearchOptions

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
    "conversation_centroids",
    "density_boost",
    "doc_rankers",
    "mmr",
    "recency_boost",
    "sessions_capped",
    "time_boost",
    "top_conversations",
]


def doc_rankers(options: SearchOptions) -> list[Ranker]:
    """The doc rankers ``options`` switch on (:attr:`SearchOptions.ranker_names`, in order).

    Each is made by its :data:`RANKERS` class from the options (``from_options``). The options
    name the rankers; this package makes them, so the options never import the rankers.
    """
    return [RANKERS.get(name).from_options(options) for name in options.ranker_names]
