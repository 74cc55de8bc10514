"""The contracts between convlab's stages: one Protocol per pluggable kind of part.

A part satisfies its Protocol structurally (no base class to inherit) and registers itself in its
kind's :class:`convlab.registry.Registry`. Code that takes a part is typed by its Protocol here,
never ``Any``.

Search passes one small record between its stages: :class:`Candidates` (rows of the index's
units frame and their scores, in rank order; after grouping per doc, also the doc ids). A
:class:`Retriever` makes the first :class:`Candidates` of a query; each :class:`Ranker` reads a
:class:`Candidates` and the query's :class:`RankContext` and returns a new :class:`Candidates`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import polars as pl

from convlab import schema

if TYPE_CHECKING:
    from convlab.resurrection.layout import Layout

__all__ = [
    "Candidates",
    "Chunk",
    "Embedder",
    "Query",
    "RankContext",
    "Ranker",
    "ResurrectionPolicy",
    "Retriever",
    "Strategy",
    "VectorSource",
]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of ``dimension``."""

    model_id: str
    dimension: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dimension)`` float32, each row of unit length."""
        ...


@dataclass(frozen=True, slots=True, eq=False)
class Candidates:
    """Scored rows of an index's units frame, in rank order (best first).

    Attributes:
        rows: int64 positions in the units frame. A row may appear more than once only after
            grouping per doc, when one unit stands for several docs.
        scores: float64, one per row.
        docs: the doc id each row stands for, once rows are grouped per doc (None before).

    Example:
        >>> c = Candidates.of([4, 2], [0.9, 0.5])
        >>> c.take([1]).rows.tolist(), len(c)
        ([2], 2)
    """

    rows: np.ndarray
    scores: np.ndarray
    docs: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.rows.shape != self.scores.shape or self.rows.ndim != 1:
            raise ValueError(
                f"candidates need one score per row: rows {self.rows.shape}, "
                f"scores {self.scores.shape}"
            )
        if self.docs is not None and len(self.docs) != len(self.rows):
            raise ValueError(f"candidates need one doc per row: {len(self.docs)} docs")

    @classmethod
    def of(
        cls,
        rows: Sequence[int] | np.ndarray,
        scores: Sequence[float] | np.ndarray,
        docs: Sequence[str] | None = None,
    ) -> Candidates:
        """Candidates with ``rows`` as int64 and ``scores`` as float64."""
        return cls(
            np.asarray(rows, dtype=np.int64).reshape(-1),
            np.asarray(scores, dtype=np.float64).reshape(-1),
            None if docs is None else tuple(docs),
        )

    @classmethod
    def empty(cls) -> Candidates:
        """No candidates."""
        return cls.of([], [])

    def take(self, positions: Sequence[int] | np.ndarray | slice) -> Candidates:
        """The candidates at ``positions`` (a subset, a new order or a slice), docs kept."""
        pos = np.arange(len(self.rows))[positions]
        docs = None if self.docs is None else tuple(self.docs[i] for i in pos.tolist())
        return Candidates(self.rows[pos], self.scores[pos], docs)

    def rescored(self, scores: np.ndarray) -> Candidates:
        """The same rows (and docs) with new ``scores``, in the same order."""
        return Candidates(self.rows, np.asarray(scores, dtype=np.float64), self.docs)

    def __len__(self) -> int:
        return len(self.rows)


@dataclass(frozen=True, slots=True)
class Query:
    """A query as retrieval sees it: its text and its vector (embedded once per batch)."""

    text: str
    vector: np.ndarray


@runtime_checkable
class Retriever(Protocol):
    """First-stage retrieval: dense (vectors) or lexical (BM25) over one units frame."""

    def search(self, query: Query, depth: int, rows: np.ndarray | None) -> Candidates:
        """The ``depth`` best rows for ``query``, best first, among ``rows`` (None: all)."""
        ...


class VectorSource(Protocol):
    """What can hand out the stored vectors of rows (a :class:`convlab.index.VectorIndex`)."""

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        """``(len(rows), dimension)`` float32 vectors of the units at ``rows``."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RankContext:
    """What a ranker may read about the query and the index, besides the candidates.

    Attributes:
        query: the query.
        units: the index's units frame (rows of candidates are positions in it).
        conversation_of_row: the ``conversation_id`` of every row, as an array.
        times: the ``timestamp`` of every row (None where undated).
        doc_ids: the ``doc_ids`` of every row.
        index: the stored vectors (for rankers that compare candidates with each other).
        now: the reference time of time-based rankers (None: no dated unit).
        k: how many docs the search returns.
    """

    query: Query
    units: pl.DataFrame
    conversation_of_row: np.ndarray
    times: Sequence[datetime | None]
    doc_ids: Sequence[Sequence[str]]
    index: VectorSource
    now: datetime | None
    k: int


@runtime_checkable
class Ranker(Protocol):
    """One search step after retrieval: ``(Candidates, RankContext) -> Candidates``."""

    def __call__(self, candidates: Candidates, context: RankContext) -> Candidates:
        """New candidates: rescored, reordered, grouped or cut."""
        ...


@dataclass(frozen=True, slots=True)
class Chunk:
    """One row of the chunks frame, as strategies see it (what :class:`Strategy` takes).

    Defined with the contract, not with the strategies, so that the contract imports no
    implementation; :mod:`convlab.strategies.base` re-exports it.
    """

    chunk_id: str
    conversation_id: str
    turn_index: int
    message_index: int
    role: str
    sentence_index: int
    sentence_in_message: int
    position: int
    timestamp: datetime | None
    text: str
    n_tokens: int
    doc_kind: str

    @property
    def turn_id(self) -> str:
        """The id of this chunk's turn."""
        return schema.turn_id(self.conversation_id, self.turn_index)

    @property
    def message_id(self) -> str:
        """The id of this chunk's message."""
        return schema.message_id(self.conversation_id, self.message_index)


class Strategy(Protocol):
    """A way of turning one conversation's chunks into units (what is embedded).

    Registered in :data:`convlab.strategies.STRATEGIES` by
    :func:`convlab.strategies.register_strategy`; :func:`convlab.pipeline.units.units` calls it
    once per conversation. What a unit's docs are (its turns or its messages) is each chunk's
    ``doc_kind``, decided once per conversation when it was loaded: no flag is passed.
    """

    name: str

    def units(self, chunks: Sequence[Chunk], *, max_tokens: int) -> list[dict[str, object]]:
        """Units (:data:`convlab.schema.UNITS` columns by name) of one conversation's chunks.

        Args:
            chunks: one conversation's chunks, in conversation order.
            max_tokens: the unit's token limit, [CLS] and [SEP] included (at most 256).
        """
        ...


@runtime_checkable
class ResurrectionPolicy(Protocol):
    """What one hit brings back into the context (:mod:`convlab.resurrection`).

    Registered in :data:`convlab.resurrection.POLICIES`. The budget walk, the same for every
    policy, decides what of it fits: the first piece is all or nothing for the hit, each later
    piece all or nothing for itself.
    """

    name: str

    def pieces(self, unit_id: str, doc_id: str | None, layout: Layout) -> list[list[str]]:
        """The chunk ids the hit brings back, as pieces in the order the walk offers them.

        Args:
            unit_id: the hit's unit.
            doc_id: the doc the hit stands for (a search hit's ``doc_id``), or None: the
                unit's docs.
            layout: look-ups of units, chunks and docs.
        """
        ...
