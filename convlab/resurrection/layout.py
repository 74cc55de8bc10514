"""The lookups every resurrection policy reads: units, chunks, docs and their order.

:class:`Layout` is built once from a units frame and a chunks frame (:meth:`Layout.of`) and then
shared by every hit of every query, so a policy answers "which chunks does this hit bring back"
with dictionary look-ups only.

A chunk's doc follows its ``doc_kind`` (:data:`convlab.schema.DOC_KINDS`): its turn
(``"{conversation_id}:t{turn_index}"``) where docs are turns, its message
(``"{conversation_id}:m{message_index}"``) where docs are messages. Docs are ordered in their
conversation by the position of their first chunk.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from convlab import schema

__all__ = ["Layout"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """Units, chunks and docs as look-ups.

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
