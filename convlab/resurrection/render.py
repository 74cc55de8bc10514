"""A resurrected context as prompt-ready text: who said what, when, and where it is written.

:func:`context_text` turns a :data:`convlab.schema.CONTEXT` frame into text for a model's
prompt. Chunks of one message form one block under a header naming the conversation, the turn,
the time, the speaker (a dialog speaker's name, else the role) and the source file and line;
chunks of one message that are not next to each other are joined by ``…``, and ``[…]`` stands
between blocks of one conversation where messages were left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol, TypedDict

import polars as pl


class Resurrected(Protocol):
    """What :func:`hit_contexts` reads of a :class:`~convlab.resurrection.Resurrection`.

    A structural type, so that this module, which ``Resurrection.text()`` calls, does not import
    the module that defines it.
    """

    @property
    def context(self) -> pl.DataFrame:
        """The context frame (:data:`convlab.schema.CONTEXT`)."""
        ...

    @property
    def hits_skipped(self) -> Sequence[int]:
        """Ranks of the hits whose first piece did not fit."""
        ...

    @property
    def policy(self) -> str:
        """The policy's name."""
        ...

    @property
    def budget(self) -> int:
        """The token budget."""
        ...


__all__ = ["Block", "block_header", "blocks", "context_text", "hit_contexts"]


def block_header(
    conversation_id: str,
    turn: int | None,
    when: datetime | None,
    speaker: str | None,
    source_path: str | None,
    source_line: int | None,
) -> str:
    """``[conversation · turn N · time · speaker · file:line]``, leaving out what is unknown.

    Example:
        >>> block_header("conv-26", 3, None, "Caroline", "locomo10.json", 1)
        '[conv-26 · turn 3 · Caroline · locomo10.json:1]'
    """
    parts = [conversation_id]
    if turn is not None:
        parts.append(f"turn {turn}")
    if when is not None:
        parts.append(f"{when:%Y-%m-%d %H:%M}")
    if speaker:
        parts.append(speaker)
    if source_path:
        parts.append(f"{source_path}:{source_line}" if source_line else source_path)
    return "[" + " · ".join(parts) + "]"


class Block(TypedDict):
    """One message's chunks in a context: who, when, where, and the text brought back."""

    header: str  # block_header(...)
    conversation_id: str
    turn: int
    message_index: int
    role: str
    speaker: str | None
    timestamp: str | None  # ISO 8601
    source_path: str | None
    source_line: int | None
    chunk_ids: list[str]
    positions: list[int]  # the chunks' places in their conversation
    text: str  # the chunks, "…" between chunks that are not next to each other
    tokens: int
    is_target: bool  # holds a target of a resurrected hit


def blocks(context: pl.DataFrame) -> list[Block]:
    """The context's chunks grouped by message, in conversation order.

    Args:
        context: a :data:`convlab.schema.CONTEXT` frame (``Resurrection.context``).
    """
    out: list[Block] = []
    for _, rows in context.sort("conversation_id", "position").group_by(
        "conversation_id", "message_index", maintain_order=True
    ):
        r = rows.row(0, named=True)
        positions = rows["position"].to_list()
        parts: list[str] = []
        for i, (pos, text) in enumerate(zip(positions, rows["text"].to_list(), strict=True)):
            if i and pos > positions[i - 1] + 1:
                parts.append("…")
            parts.append(str(text))
        when = r.get("timestamp")
        speaker = r.get("speaker")
        out.append(
            {
                "header": block_header(
                    str(r["conversation_id"]),
                    r["turn_index"],
                    when,
                    speaker or r["role"],
                    r.get("source_path"),
                    r.get("source_line"),
                ),
                "conversation_id": str(r["conversation_id"]),
                "turn": r["turn_index"],
                "message_index": r["message_index"],
                "role": r["role"],
                "speaker": speaker,
                "timestamp": when.isoformat() if when else None,
                "source_path": r.get("source_path"),
                "source_line": r.get("source_line"),
                "chunk_ids": rows["chunk_id"].to_list(),
                "positions": positions,
                "text": " ".join(parts),
                "tokens": int(rows["n_tokens"].sum()),
                "is_target": bool(rows["is_target"].any()),
            }
        )
    return out


def context_text(context: pl.DataFrame) -> str:
    """The context as text, one block per message, in conversation order.

    Args:
        context: a :data:`convlab.schema.CONTEXT` frame (``Resurrection.context``).

    Example:
        Two chunks of one message, then a message two positions later::

            [c · turn 0 · 2026-01-05 10:00 · user · a.jsonl:1]
            How does brightness scoring work?
            [c · turn 0 · 2026-01-05 10:00 · assistant · a.jsonl:2]
            Brightness scoring uses magnitude voting. … Scores are capped at 10000.
    """
    lines: list[str] = []
    last: Block | None = None
    for b in blocks(context):
        if (
            last is not None
            and last["conversation_id"] == b["conversation_id"]
            and b["positions"][0] > last["positions"][-1] + 1
        ):
            lines.append("[…]")
        lines += [b["header"], b["text"]]
        last = b
    return "\n".join(lines)


def hit_contexts(resurrection: Resurrected, hits: int) -> list[dict[str, Any]]:
    """What each of ``hits`` ranked hits brought back, in rank order (``search --budget``).

    A hit's ``pieces`` are the blocks of the chunks it brought back first, so the pieces of
    all hits together are the whole context, each chunk once; ``tokens`` is what they cost.
    A hit whose first piece did not fit is ``skipped``.

    Args:
        resurrection: the context of the hits, ranks 1 to ``hits``.
        hits: how many hits were ranked.
    """
    ctx = resurrection.context
    skipped = set(resurrection.hits_skipped)
    out = []
    for rank in range(1, hits + 1):
        pieces = blocks(ctx.filter(pl.col("hit_rank") == rank))
        out.append(
            {
                "policy": resurrection.policy,
                "budget": resurrection.budget,
                "tokens": sum(p["tokens"] for p in pieces),
                "skipped": rank in skipped,
                "pieces": pieces,
            }
        )
    return out
