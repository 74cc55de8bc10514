"""What the search panel searches: per strategy an index and its BM25, and the frames of hits.

:class:`PanelData` is what :class:`convlab.app.widgets.SearchPanel` is opened on (built from
transcripts by ``SearchPanel.from_data`` or read from a store by ``SearchPanel.from_store``),
and the frames :func:`convlab.app.display.describe_hits` reads to place its hits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from convlab.index import VectorIndex
    from convlab.index.bm25 import BM25Index
    from convlab.protocols import Embedder
    from convlab.systems.system import System, View

__all__ = ["PanelData"]


@dataclass(frozen=True, slots=True)
class PanelData:
    """What the panel searches: per strategy, an index (and its BM25); the frames to describe hits.

    Attributes:
        indexes: strategy name -> :class:`convlab.index.VectorIndex` (its units; its vectors
            unless ``dense`` says the strategy is searched by BM25 alone).
        chunks: the chunks the units were made of (what a hit resurrects).
        conversations: titles and ids.
        turns: when each turn started.
        embedder: embeds the queries (the model the indexes were built with).
        bm25: strategy name -> BM25 over the same units (hybrid search); a strategy missing
            here gets its BM25 built on its first search that needs it.
        dense: strategy name -> whether its units are embedded (missing: they are).
        system: the system selected at start (None: the default system when its views are
            held, else the first strategy searched densely).
        messages: the messages (each hit's file and line; None: hits name the conversation's
            file).
    """

    indexes: Mapping[str, VectorIndex]
    chunks: pl.DataFrame
    conversations: pl.DataFrame
    turns: pl.DataFrame
    embedder: Embedder
    bm25: Mapping[str, BM25Index | None] = field(default_factory=dict)
    dense: Mapping[str, bool] = field(default_factory=dict)
    system: System | None = None
    messages: pl.DataFrame | None = None

    def systems(self) -> dict[str, System]:
        """The systems these views can run, by name.

        The start system first, then the default system (when every view it needs is held),
        then each strategy's own views.
        """
        from convlab.systems import default_system, resolve_system

        out: dict[str, System] = {}
        for s in (self.system, default_system()):
            if s is not None and all(self._holds(v) for v in s.views):
                out.setdefault(s.name, s)
        for strategy in self.indexes:
            prefixes = ("", "bm25:", "hybrid:") if self.dense.get(strategy, True) else ("bm25:",)
            for prefix in prefixes:
                one = resolve_system(f"{prefix}{strategy}")
                out.setdefault(one.name, one)
        return out

    def _holds(self, view: View) -> bool:
        embedded = self.dense.get(view.strategy, True)
        return view.strategy in self.indexes and (embedded or not view.retrieval.needs_vectors)

    def frame(self, name: str) -> pl.DataFrame:
        """The frame ``name`` as :func:`convlab.app.display.describe_hits` reads it.

        Raises:
            KeyError: a frame the panel does not hold (``messages`` when not given).
        """
        frames = {
            "conversations": self.conversations,
            "chunks": self.chunks,
            "turns": self.turns,
        }
        if self.messages is not None:
            frames["messages"] = self.messages
        return frames[name]
