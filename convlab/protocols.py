"""The contracts between convlab's stages: one Protocol per pluggable kind of part.

A part satisfies its Protocol structurally (no base class to inherit) and registers itself in its
kind's :class:`convlab.registry.Registry`. Code that takes a part is typed by its Protocol here,
never ``Any``.

Search passes one small record between its stages: :class:`Candidates` (rows of the index's
units frame and their scores, in rank order; after grouping per doc, also the doc ids). A
:class:`Retriever` makes the first :class:`Candidates` of a query; each :class:`Ranker` reads a
:class:`Candidates` and the query's :class:`RankContext` and returns a new :class:`Candidates`.
The records that cross the other contracts live here too: :class:`Chunk` (what a
:class:`Strategy` takes) and :class:`Layout` (what a :class:`ResurrectionPolicy` reads), so that
no contract imports an implementation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

import numpy as np
import polars as pl

from convlab import schema

__all__ = [
    "Candidates",
    "Chunk",
    "Embedder",
    "Layout",
    "Query",
    "RankContext",
    "Ranker",
    "ResurrectionPolicy",
    "Retriever",
    "Strategy",
    "TokenEmbedder",
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


@runtime_checkable
class TokenEmbedder(Embedder, Protocol):
    """An :class:`Embedder` that also hands out its token states: what late chunking pools."""

    def encode_tokens(self, texts: Sequence[str], max_tokens: int) -> list[np.ndarray]:
        """Per text, ``(tokens, dimension)`` float32: the encoder's last hidden states.

        Every token the model sees, [CLS] first and [SEP] last, unnormalised (the model's own
        pooling is their mean). A text of more than ``max_tokens`` tokens raises ``ValueError``:
        never truncated silently.
        """
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
    """A query as retrieval sees it: its text, its vector (embedded once per batch) and time.

    ``time`` is when the question was asked, where the data says (LongMemEval's
    ``question_date``); None elsewhere.
    """

    text: str
    vector: np.ndarray
    time: datetime | None = None


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
        anchor: the query's own time, else the latest message time in its scope (None: not
            made; only the rankers that read times the query names ask for it).
    """

    query: Query
    units: pl.DataFrame
    conversation_of_row: np.ndarray
    times: Sequence[datetime | None]
    doc_ids: Sequence[Sequence[str]]
    index: VectorSource
    now: datetime | None
    k: int
    anchor: datetime | None = None


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
            max_tokens: the unit's token limit, [CLS] and [SEP] included (at most
                :data:`convlab.model.MAX_TOKENS`).
        """
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """Units, chunks and docs as look-ups: what every resurrection policy reads.

    Built once from a units frame and a chunks frame (:meth:`Layout.of`) and then passed to
    every hit of every query, so a policy answers "which chunks does this hit bring back" with
    dictionary look-ups only. A chunk's doc follows its ``doc_kind``
    (:data:`convlab.schema.DOC_KINDS`): its turn where docs are turns, its message where docs
    are messages; docs are ordered in their conversation by the position of their first chunk.
    Defined with the contract (:class:`ResurrectionPolicy`), like :class:`Chunk`, so that the
    contract imports no implementation.

    Attributes:
        unit_chunks: unit id -> its chunk ids (what it was embedded with), in conversation order.
        unit_docs: unit id -> the docs it stands for (``units.doc_ids``).
        unit_target: unit id -> its target chunk id (None for whole-turn windows).
        tokens: chunk id -> model tokens (``chunks.n_tokens``).
        doc_of: chunk id -> its doc id.
        doc_chunks: doc id -> its chunk ids, in conversation order.
        doc_kind: doc id -> ``"turn"`` or ``"message"``.
        doc_role: doc id -> the role of its first chunk (a message's role).
        doc_turn: doc id -> its turn index.
        conversation_docs: conversation id -> its doc ids, in conversation order.
        doc_place: doc id -> (conversation id, index in ``conversation_docs``).
    """

    unit_chunks: dict[str, list[str]]
    unit_docs: dict[str, list[str]]
    unit_target: dict[str, str | None]
    tokens: dict[str, int]
    doc_of: dict[str, str]
    doc_chunks: dict[str, list[str]]
    doc_kind: dict[str, str]
    doc_role: dict[str, str]
    doc_turn: dict[str, int]
    conversation_docs: dict[str, list[str]]
    doc_place: dict[str, tuple[str, int]]

    @classmethod
    def of(cls, units: pl.DataFrame, chunks: pl.DataFrame) -> Layout:
        """The layout of ``units`` over ``chunks`` (a :data:`convlab.schema.CHUNKS` frame).

        ``units`` needs ``unit_id`` and ``chunk_ids``; ``doc_ids`` and ``target_chunk_id`` are
        read when present.

        Raises:
            ValueError: a frame lacks a needed column, or a chunk's ``doc_kind`` is not one of
                :data:`convlab.schema.DOC_KINDS` (naming the chunk).
        """
        need_u = ["unit_id", "chunk_ids"]
        need_c = ["chunk_id", "conversation_id", "turn_index", "message_index", "position"]
        need_c += ["role", "n_tokens", "doc_kind"]
        for name, df, need in (("units", units, need_u), ("chunks", chunks, need_c)):
            missing = [c for c in need if c not in df.columns]
            if missing:
                raise ValueError(f"{name} lacks columns {missing}")
        bad = chunks.filter(~pl.col("doc_kind").is_in(list(schema.DOC_KINDS)))
        if bad.height:
            raise ValueError(
                f"chunk {bad['chunk_id'][0]!r} has doc_kind {bad['doc_kind'][0]!r}; "
                f"valid: {', '.join(schema.DOC_KINDS)}"
            )
        doc = (
            pl.when(pl.col("doc_kind") == "message")
            .then(schema.message_id_expr())
            .otherwise(schema.turn_id_expr())
        )
        rows = chunks.sort("conversation_id", "position").select(
            "chunk_id",
            "conversation_id",
            doc.alias("doc"),
            "doc_kind",
            "role",
            "turn_index",
            "n_tokens",
        )
        tokens: dict[str, int] = {}
        doc_of: dict[str, str] = {}
        doc_chunks: dict[str, list[str]] = {}
        doc_kind: dict[str, str] = {}
        doc_role: dict[str, str] = {}
        doc_turn: dict[str, int] = {}
        conversation_docs: dict[str, list[str]] = {}
        for cid, conv, d, kind, role, turn, n in rows.iter_rows():
            tokens[cid] = n
            doc_of[cid] = d
            if d not in doc_chunks:
                doc_chunks[d] = []
                doc_kind[d], doc_role[d], doc_turn[d] = kind, role, turn
                conversation_docs.setdefault(conv, []).append(d)
            doc_chunks[d].append(cid)
        doc_place = {
            d: (conv, i) for conv, docs in conversation_docs.items() for i, d in enumerate(docs)
        }
        u = units.select(
            *need_u,
            *(
                pl.col(c) if c in units.columns else pl.lit(None, dtype=schema.UNITS[c]).alias(c)
                for c in ("doc_ids", "target_chunk_id")
            ),
        )
        ids = u["unit_id"].to_list()
        return cls(
            unit_chunks=dict(zip(ids, u["chunk_ids"].to_list(), strict=True)),
            unit_docs={k: v or [] for k, v in zip(ids, u["doc_ids"].to_list(), strict=True)},
            unit_target=dict(zip(ids, u["target_chunk_id"].to_list(), strict=True)),
            tokens=tokens,
            doc_of=doc_of,
            doc_chunks=doc_chunks,
            doc_kind=doc_kind,
            doc_role=doc_role,
            doc_turn=doc_turn,
            conversation_docs=conversation_docs,
            doc_place=doc_place,
        )

    def chunks_of_docs(self, docs: list[str]) -> list[str]:
        """The chunks of ``docs``, each once, in conversation order.

        Raises:
            ValueError: a doc with no chunk in the chunks frame.
        """
        missing = [d for d in docs if d not in self.doc_chunks]
        if missing:
            raise ValueError(f"doc {missing[0]!r} has no chunk in the chunks frame")
        ordered = sorted(dict.fromkeys(docs), key=self.doc_place.__getitem__)
        return [c for d in ordered for c in self.doc_chunks[d]]

    def hit_docs(self, unit_id: str, doc_id: str | None) -> list[str]:
        """The docs a hit stands for.

        Its ``doc_id`` when the hit names one, else its unit's ``doc_ids``, else (a units frame
        without them) the docs of the unit's chunks.
        """
        if doc_id is not None:
            return [doc_id]
        return self.unit_docs[unit_id] or list(
            dict.fromkeys(self.doc_of[c] for c in self.unit_chunks[unit_id] if c in self.doc_of)
        )


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
