"""The one place that names every frame's columns and dtypes.

Data flows as polars frames, each stage a function from one documented frame to the next::

    conversations, messages, blocks   (convlab.load)
      -> turns                         (convlab.pipeline.turns)
      -> chunks                        (convlab.pipeline.chunks)
      -> units (what is embedded)      (convlab.pipeline.units)
      -> hits                          (convlab.retrieval.search)
      -> context (resurrected chunks)  (convlab.resurrection)

Identifiers are strings built by the helpers at the bottom of this module, so that the same
thing has the same id in every frame, run file and report:

- ``conversation_id``: given by the source (session id, file stem, LoCoMo ``sample_id``).
- ``message_id``: ``"{conversation_id}:m{message_index}"``.
- ``turn_id``: ``"{conversation_id}:t{turn_index}"``.
- ``chunk_id``: ``"{conversation_id}:t{turn_index}:{role}:s{sentence_index}"``; ``sentence_index``
  counts the chunks of that role's part of the turn, so ``s0`` is the role's S0 (its first
  sentence).
- ``doc_id``: what retrieval is judged on, by the conversation's ``doc_kind`` (one of
  :data:`DOC_KINDS`, decided once per conversation when it is loaded and carried on every chunk):
  the ``turn_id`` for ``"turn"`` (chats and agent sessions), the ``message_id`` for ``"message"``
  (two-speaker dialogs such as LoCoMo, or a corpus labelled per message).

Roles are ``user``, ``assistant``, ``system`` and ``tool``. In a dialog, the first speaker is
``user`` and the second ``assistant``; ``messages.speaker`` keeps the real names.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

import polars as pl

__all__ = [
    "BLOCKS",
    "BLOCK_TYPES",
    "CHUNKS",
    "CONTEXT",
    "CONVERSATIONS",
    "CONVERSATION_KINDS",
    "DOC_KINDS",
    "FILES",
    "HITS",
    "MESSAGES",
    "QUERIES",
    "QUERY_EVIDENCE",
    "ROLES",
    "SIDES",
    "SKIPPED",
    "TURNS",
    "UNITS",
    "chunk_id",
    "doc_kind_of",
    "empty",
    "frame",
    "message_id",
    "message_id_expr",
    "session_id",
    "turn_id",
    "turn_id_expr",
]

UTC_TIME = pl.Datetime("us", "UTC")

ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")
BLOCK_TYPES: tuple[str, ...] = ("text", "thinking", "tool_call", "tool_result", "image", "other")
CONVERSATION_KINDS: tuple[str, ...] = ("chat", "dialog")
DOC_KINDS: tuple[str, ...] = ("turn", "message")
"""What a doc (the thing retrieval is judged on) is in a conversation: a turn or a message."""
SIDES: tuple[str, ...] = ("question", "answer")

Schema = Mapping[str, pl.DataType | type[pl.DataType]]

CONVERSATIONS: Schema = {
    "conversation_id": pl.String,
    "title": pl.String,  # null when the format has none
    "source_format": pl.String,  # a key of convlab.loaders.FORMATS
    "source_path": pl.String,
    "kind": pl.String,  # "chat" (user/assistant, agents) or "dialog" (two speakers)
    "doc_kind": pl.String,  # one of DOC_KINDS: "turn" (chats), "message" (dialogs)
    "parent_conversation_id": pl.String,  # parent conversation of a sub-agent or a fork, else null
    "agent_id": pl.String,  # the sub-agent's id (Claude Code agentId) when it is one, else null
    "project": pl.String,  # the working directory the session ran in (its cwd), else null
    "started_at": UTC_TIME,
    "ended_at": UTC_TIME,
}

MESSAGES: Schema = {
    "conversation_id": pl.String,
    "message_index": pl.Int32,  # 0.. in conversation order
    "message_id": pl.String,
    "role": pl.String,  # one of ROLES
    "speaker": pl.String,  # dialog speaker name, or the tool name for role tool; else null
    "timestamp": UTC_TIME,
    "is_real_user": pl.Boolean,  # a human's message with text (not a tool-result carrier)
    "is_sidechain": pl.Boolean,  # sub-agent or sidechain message
    "session_index": pl.Int32,  # dialog session number (LoCoMo session_N), else null
    "external_id": pl.String,  # the source's own id (uuid, dia_id, node id), else null
    "source_path": pl.String,
    "source_line": pl.Int32,  # 1-based line in source_path (1 for whole-file JSON)
}

BLOCKS: Schema = {
    "conversation_id": pl.String,
    "message_index": pl.Int32,
    "block_index": pl.Int32,  # 0.. within the message
    "block_type": pl.String,  # one of BLOCK_TYPES
    "text": pl.String,  # text, thinking, tool output; "" for images
    "tool_name": pl.String,
    "tool_input": pl.String,  # JSON text of a tool call's input
    "is_error": pl.Boolean,
}

FILES: Schema = {
    "source_path": pl.String,
    "source_format": pl.String,
    "lines_read": pl.Int64,
    "records": pl.Int64,  # records turned into messages or metadata
    "skipped": pl.Int64,
}

SKIPPED: Schema = {
    "source_path": pl.String,
    "source_line": pl.Int32,
    "reason": pl.String,
}

TURNS: Schema = {
    "conversation_id": pl.String,
    "turn_index": pl.Int32,
    "turn_id": pl.String,
    "first_message_index": pl.Int32,
    "last_message_index": pl.Int32,  # inclusive
    "n_messages": pl.Int32,
    "started_at": UTC_TIME,
    "is_complete": pl.Boolean,  # has a real user message and at least one assistant reply
}

CHUNKS: Schema = {
    "chunk_id": pl.String,
    "conversation_id": pl.String,
    "turn_index": pl.Int32,
    "message_index": pl.Int32,
    "block_index": pl.Int32,
    "role": pl.String,
    # chunk counters keep their stored names (written into stores and run folders):
    "sentence_index": pl.Int32,  # chunk within the role's part of the turn: 0 is the role's S0
    "sentence_in_message": pl.Int32,  # chunk within the message: 0 is the message's first
    "position": pl.Int32,  # order of the chunk in the whole conversation
    "timestamp": UTC_TIME,  # of the message
    "text": pl.String,
    "n_tokens": pl.Int32,  # model tokens, without [CLS]/[SEP]
    "doc_kind": pl.String,  # the conversation's doc kind (DOC_KINDS)
}

UNITS: Schema = {
    "unit_id": pl.String,  # "{strategy}:{target chunk_id}" or "{strategy}:{turn_id}:w{i}"
    "strategy": pl.String,
    "conversation_id": pl.String,
    "turn_index": pl.Int32,
    "message_index": pl.Int32,  # message of the target chunk (first message for whole_turn)
    # the docs this unit stands for, in order: [turn_id] where docs are turns; where docs are
    # messages the message_id of the target, or every message of a window. A doc scores its
    # best unit.
    "doc_ids": pl.List(pl.String),
    "role": pl.String,  # role of the target chunk (null for whole_turn windows)
    "side": pl.String,  # qa_pair: "question" or "answer"; else null
    "target_chunk_id": pl.String,  # null for whole_turn windows
    "chunk_ids": pl.List(pl.String),  # every chunk in the unit, in conversation order
    "text": pl.String,  # exactly what is embedded
    "n_tokens": pl.Int32,  # model tokens of text, with [CLS]/[SEP]; never over max_tokens
    "timestamp": UTC_TIME,  # of the target's message (of the turn's start for whole_turn)
    # late chunking only: tokens of the pass (window of messages) the unit's vector was pooled
    # from, the smallest over its chunks (convlab.strategies.late); null for other strategies
    "context_tokens": pl.Int32,
}

HITS: Schema = {
    "query_id": pl.String,
    "rank": pl.Int32,  # 1-based
    "score": pl.Float64,  # cosine similarity for dense, the fused or boosted score otherwise
    "unit_id": pl.String,
    "doc_id": pl.String,
    "conversation_id": pl.String,
    "turn_index": pl.Int32,
    "message_index": pl.Int32,
    "strategy": pl.String,
    # of the doc's best unit (as in UNITS): what matched, and what it resurrects
    "text": pl.String,
    "role": pl.String,
    "side": pl.String,
    "timestamp": UTC_TIME,
    "chunk_ids": pl.List(pl.String),
}

CONTEXT: Schema = {
    "chunk_id": pl.String,
    "conversation_id": pl.String,
    "turn_index": pl.Int32,
    "message_index": pl.Int32,
    "position": pl.Int32,
    "role": pl.String,
    "timestamp": UTC_TIME,  # of the chunk's message
    "text": pl.String,
    "n_tokens": pl.Int32,
    "hit_rank": pl.Int32,  # rank of the hit that first brought this chunk back
    "is_target": pl.Boolean,  # the chunk is a target of some resurrected hit
    # of the chunk's message, when resurrect() is given the messages; else null
    "speaker": pl.String,
    "source_path": pl.String,
    "source_line": pl.Int32,
}

QUERIES: Schema = {
    "query_id": pl.String,
    "text": pl.String,
    "conversation_id": pl.String,  # scope: search inside this conversation; null = corpus-wide
    "relevant": pl.List(pl.String),  # doc ids judged relevant
    "category": pl.String,
    "answer": pl.String,  # reference answer when known
}

QUERY_EVIDENCE: Schema = {"evidence": pl.List(pl.String)}
"""An optional column of a queries frame: the message ids that hold the evidence, where the
labels name it finer than the docs (LongMemEval's ``has_answer`` messages, whose docs are turns
under convlab's protocol). Resurrection's coverage then asks for those messages, not their whole
turn (:func:`convlab.resurrection.budget_measures`); retrieval still judges the docs."""


def message_id(conversation_id: str, message_index: int) -> str:
    """The id of a message: ``"{conversation_id}:m{message_index}"``."""
    return f"{conversation_id}:m{message_index}"


def turn_id(conversation_id: str, turn_index: int) -> str:
    """The id of a turn: ``"{conversation_id}:t{turn_index}"``."""
    return f"{conversation_id}:t{turn_index}"


def message_id_expr() -> pl.Expr:
    """:func:`message_id` over a frame's ``conversation_id`` and ``message_index`` columns."""
    return pl.format("{}:m{}", "conversation_id", "message_index").alias("message_id")


def turn_id_expr() -> pl.Expr:
    """:func:`turn_id` over a frame's ``conversation_id`` and ``turn_index`` columns."""
    return pl.format("{}:t{}", "conversation_id", "turn_index").alias("turn_id")


def session_id(conversation_id: str, timestamp: datetime | None) -> str:
    """The session a message (or a unit) belongs to: its conversation's messages of one UTC day.

    ``"{conversation_id}@{YYYY-MM-DD}"``, or the conversation id alone when undated. One rule
    for every source: LoCoMo stamps each ``session_N`` with one time and has no two sessions of
    one conversation on one day (so this is exactly its ``session_index``), LongMemEval's
    sessions are conversations stamped with one date, and an agent session is one
    conversation, most within one day.

    Example:
        >>> from datetime import UTC, datetime
        >>> session_id("conv-26", datetime(2023, 5, 8, 13, 56, tzinfo=UTC))
        'conv-26@2023-05-08'
        >>> session_id("conv-26", None)
        'conv-26'
    """
    if timestamp is None:
        return conversation_id
    if timestamp.tzinfo is not None:
        timestamp = timestamp.astimezone(UTC)
    return f"{conversation_id}@{timestamp.date().isoformat()}"


def doc_kind_of(kind: str) -> str:
    """The default doc kind of a conversation of ``kind``: messages in dialogs, else turns.

    Example:
        >>> doc_kind_of("dialog"), doc_kind_of("chat")
        ('message', 'turn')
    """
    return "message" if kind == "dialog" else "turn"


def chunk_id(conversation_id: str, turn_index: int, role: str, sentence_index: int) -> str:
    """The id of a chunk: ``"{conversation_id}:t{turn_index}:{role}:s{sentence_index}"``."""
    return f"{conversation_id}:t{turn_index}:{role}:s{sentence_index}"


def empty(schema: Schema) -> pl.DataFrame:
    """An empty frame with the columns and dtypes of ``schema``."""
    return pl.DataFrame(schema=dict(schema))


def frame(rows: list[dict[str, object]] | dict[str, list[object]], schema: Schema) -> pl.DataFrame:
    """Build a frame of ``schema`` from rows or columns, in the schema's column order.

    Missing columns are filled with nulls; extra columns raise ``ValueError``.
    """
    if isinstance(rows, dict):
        extra = set(rows) - set(schema)
        if extra:
            raise ValueError(f"columns not in the schema: {sorted(extra)}")
        n = len(next(iter(rows.values()))) if rows else 0
        data = {name: rows.get(name, [None] * n) for name in schema}
        return pl.DataFrame(data, schema=dict(schema), strict=False)
    if not rows:
        return empty(schema)
    extra = set().union(*(r.keys() for r in rows)) - set(schema)
    if extra:
        raise ValueError(f"columns not in the schema: {sorted(extra)}")
    return pl.DataFrame(rows, schema=dict(schema), strict=False, infer_schema_length=None)
