"""What every transcript reader feeds: the builder that collects rows and skips.

A reader (one module per format, registered in :mod:`convlab.loaders.registry`) parses files
(JSON-lines files through :mod:`convlab.loaders.lines`) and feeds a :class:`CorpusBuilder`. The
builder assigns message and block indices, records what was read and what was skipped, and in
strict mode turns the first skip into a :class:`convlab.errors.LoadError` that names the
file and line. Nothing is dropped without a row in ``report.skipped``. The result is a
:class:`convlab.loaders.corpus.Corpus`.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from convlab import schema
from convlab.errors import LoadError
from convlab.loaders.blocks import BlockRow
from convlab.loaders.corpus import Corpus, LoadReport

__all__ = ["MAX_QUESTION_CHARS", "CorpusBuilder", "question_problem"]

MAX_QUESTION_CHARS = 16_384
"""The longest text a labelled question may have: some 4,000 tokens, 16 times what the model
reads (256) and 80 times LoCoMo's longest question. A longer one is a damaged or hostile file:
refused (skipped in lenient mode) naming the file, before any work is spent on it."""


def question_problem(text: str) -> str | None:
    """What is wrong with a question's text (too long), or ``None``.

    Example:
        >>> question_problem("x" * 20_000)
        'a question of 20,000 characters, over the 16,384 a question may have'
    """
    if len(text) > MAX_QUESTION_CHARS:
        n, most = len(text), MAX_QUESTION_CHARS
        return f"a question of {n:,} characters, over the {most:,} a question may have"
    return None


_BLOCK_TYPES = frozenset(schema.BLOCK_TYPES)
_ROLES = frozenset(schema.ROLES)


@dataclass
class _Conversation:
    conversation_id: str
    title: str | None
    source_format: str
    source_path: str
    kind: str
    doc_kind: str
    parent_conversation_id: str | None
    agent_id: str | None = None
    project: str | None = None
    n_messages: int = 0
    times: list[int] = field(default_factory=list)  # microseconds since the epoch


class CorpusBuilder:
    """Collects conversations, messages and blocks from readers, column by column.

    Holds state (rows so far, per-file counters), so it is a class; readers call
    :meth:`conversation`, :meth:`message` and :meth:`skip`, and :func:`convlab.load` calls
    :meth:`build` once at the end.

    Args:
        strict: raise :class:`LoadError` at the first skipped record instead of counting it.
        max_block_chars: blocks longer than this are cut (with a marker) so one huge tool
            output cannot blow up memory; the cut is recorded in ``report.skipped`` as
            ``"truncated"`` without failing strict mode.
    """

    TRUNCATION_MARKER = "\n[... truncated by convlab]"

    def __init__(self, *, strict: bool = False, max_block_chars: int = 200_000) -> None:
        self.strict = strict
        self.max_block_chars = max_block_chars
        self._conversations: dict[str, _Conversation] = {}
        self._messages: dict[str, list[Any]] = {
            name: [] for name in schema.MESSAGES if name != "message_id"
        }
        self._blocks: dict[str, list[Any]] = {name: [] for name in schema.BLOCKS}
        self._files: dict[str, list[Any]] = {name: [] for name in schema.FILES}
        self._skipped: dict[str, list[Any]] = {name: [] for name in schema.SKIPPED}
        self._queries: list[dict[str, Any]] = []
        self._file_records = 0
        self._file_skipped = 0

    # -- files ------------------------------------------------------------------------------
    def file_done(self, path: str | Path, source_format: str, lines_read: int) -> None:
        """Record that a file was read, with the records and skips counted since the last one."""
        f = self._files
        f["source_path"].append(str(path))
        f["source_format"].append(source_format)
        f["lines_read"].append(int(lines_read))
        f["records"].append(self._file_records)
        f["skipped"].append(self._file_skipped)
        self._file_records = 0
        self._file_skipped = 0

    def record(self, n: int = 1) -> None:
        """Count records that were read but made no message (metadata, summaries, ...)."""
        self._file_records += n

    def skip(self, path: str | Path, line: int, reason: str) -> None:
        """Skip one record: raise in strict mode, else count it with file, line and reason."""
        if self.strict:
            raise LoadError(path, line, reason)
        self._note(path, line, reason)

    def _note(self, path: str | Path, line: int, reason: str) -> None:
        s = self._skipped
        s["source_path"].append(str(path))
        s["source_line"].append(int(line))
        s["reason"].append(reason)
        self._file_skipped += 1

    # -- rows -------------------------------------------------------------------------------
    def conversation(
        self,
        conversation_id: str,
        *,
        source_format: str,
        source_path: str | Path,
        title: str | None = None,
        kind: str = "chat",
        doc_kind: str | None = None,
        parent_conversation_id: str | None = None,
        agent_id: str | None = None,
        project: str | None = None,
    ) -> str:
        """Open a conversation (or return the existing one with this id) and return its id.

        Called again for an open conversation, it fills the ``title`` and ``project`` it lacks.

        The conversation's doc kind (what retrieval is judged on) is decided here, once:
        ``doc_kind`` when given, else messages for a ``"dialog"`` and turns for a ``"chat"``
        (:func:`convlab.schema.doc_kind_of`).

        Raises:
            ValueError: an unknown ``kind`` or ``doc_kind``, listing the valid ones.
        """
        if kind not in schema.CONVERSATION_KINDS:
            raise ValueError(
                f"unknown conversation kind {kind!r}; valid: {', '.join(schema.CONVERSATION_KINDS)}"
            )
        doc_kind = doc_kind or schema.doc_kind_of(kind)
        if doc_kind not in schema.DOC_KINDS:
            raise ValueError(f"unknown doc kind {doc_kind!r}; valid: {', '.join(schema.DOC_KINDS)}")
        conv = self._conversations.get(conversation_id)
        if conv is None:
            self._conversations[conversation_id] = _Conversation(
                conversation_id,
                title,
                source_format,
                str(source_path),
                kind,
                doc_kind,
                parent_conversation_id,
                agent_id,
                project,
            )
            return conversation_id
        if title and not conv.title:
            conv.title = title
        if project and not conv.project:
            conv.project = project
        return conversation_id

    def has_conversation(self, conversation_id: str) -> bool:
        """Whether a conversation with this id was opened already."""
        return conversation_id in self._conversations

    def message(
        self,
        conversation_id: str,
        role: str,
        blocks: Sequence[BlockRow],
        *,
        source_path: str | Path,
        source_line: int,
        timestamp: datetime | None = None,
        is_real_user: bool = False,
        is_sidechain: bool = False,
        speaker: str | None = None,
        session_index: int | None = None,
        external_id: str | None = None,
    ) -> int:
        """Append a message with its blocks to an open conversation; return its index."""
        if role not in _ROLES:
            raise ValueError(f"unknown role {role!r}; valid: {', '.join(schema.ROLES)}")
        conv = self._conversations[conversation_id]
        index = conv.n_messages
        conv.n_messages += 1
        ts = None if timestamp is None else round(timestamp.timestamp() * 1_000_000)
        if ts is not None:
            conv.times.append(ts)
        m = self._messages
        m["conversation_id"].append(conversation_id)
        m["message_index"].append(index)  # message_id is made from these two in build()
        m["role"].append(role)
        m["speaker"].append(speaker)
        m["timestamp"].append(ts)  # microseconds since the epoch; typed in build()
        m["is_real_user"].append(bool(is_real_user))
        m["is_sidechain"].append(bool(is_sidechain))
        m["session_index"].append(session_index)
        m["external_id"].append(external_id)
        m["source_path"].append(source_path if type(source_path) is str else str(source_path))
        m["source_line"].append(int(source_line))
        b = self._blocks
        b_conv, b_msg, b_idx = b["conversation_id"], b["message_index"], b["block_index"]
        b_type, b_text, b_name = b["block_type"], b["text"], b["tool_name"]
        b_input, b_err = b["tool_input"], b["is_error"]
        for i, (block_type, text, tool_name, tool_input, is_error) in enumerate(blocks):
            if block_type not in _BLOCK_TYPES:
                raise ValueError(
                    f"unknown block type {block_type!r}; valid: {', '.join(schema.BLOCK_TYPES)}"
                )
            if len(text) > self.max_block_chars:
                text = text[: self.max_block_chars] + self.TRUNCATION_MARKER
                self._note(source_path, source_line, f"truncated {block_type} block")
            if not text.isascii() and _SURROGATES.search(text):
                text = self._surrogates(text, source_path, source_line, f"{block_type} block")
            if tool_input and not tool_input.isascii() and _SURROGATES.search(tool_input):
                tool_input = self._surrogates(tool_input, source_path, source_line, "tool input")
            b_conv.append(conversation_id)
            b_msg.append(index)
            b_idx.append(i)
            b_type.append(block_type)
            b_text.append(text)
            b_name.append(tool_name)
            b_input.append(tool_input)
            b_err.append(bool(is_error))
        self._file_records += 1
        return index

    def message_or_record(
        self,
        conversation_id: str,
        role: str,
        blocks: Sequence[BlockRow],
        *,
        source_path: str | Path,
        source_line: int,
        timestamp: datetime | None = None,
        is_real_user: bool = False,
        is_sidechain: bool = False,
        speaker: str | None = None,
        external_id: str | None = None,
    ) -> int | None:
        """:meth:`message`, or for a message without blocks only :meth:`record`.

        Readers call this where a record may hold nothing to embed (blank text, no blocks):
        it is counted as read and makes no message. The arguments are :meth:`message`'s,
        spelled out (forwarding ``**kwargs`` cost 10% of loading a file of short messages).

        Returns:
            The message's index, or ``None`` when no message was made.
        """
        if not blocks:
            self.record()
            return None
        return self.message(
            conversation_id,
            role,
            blocks,
            source_path=source_path,
            source_line=source_line,
            timestamp=timestamp,
            is_real_user=is_real_user,
            is_sidechain=is_sidechain,
            speaker=speaker,
            external_id=external_id,
        )

    def _surrogates(self, text: str, path: str | Path, line: int, where: str) -> str:
        """Text holding lone surrogates (JSON escapes of half a pair): invalid Unicode.

        Strict mode raises; otherwise each becomes U+FFFD and the line is noted.
        """
        if self.strict:
            raise LoadError(path, line, f"invalid Unicode (a lone surrogate) in a {where}")
        self._note(path, line, f"lone surrogates replaced by U+FFFD in a {where}")
        return _SURROGATES.sub("\ufffd", text)

    def query(self, **row: Any) -> None:
        """Add a labelled query (:data:`convlab.schema.QUERIES` columns)."""
        self._queries.append(row)

    # -- result -----------------------------------------------------------------------------
    def build(self) -> Corpus:
        """The frames collected so far, typed by :mod:`convlab.schema`."""
        convs = list(self._conversations.values())
        conversations = self._frame(
            "conversations",
            {
                "conversation_id": [c.conversation_id for c in convs],
                "title": [c.title for c in convs],
                "source_format": [c.source_format for c in convs],
                "source_path": [c.source_path for c in convs],
                "kind": [c.kind for c in convs],
                "doc_kind": [c.doc_kind for c in convs],
                "parent_conversation_id": [c.parent_conversation_id for c in convs],
                "agent_id": [c.agent_id for c in convs],
                "project": [c.project for c in convs],
            },
            schema.CONVERSATIONS,
        ).with_columns(
            _micros([min(c.times) if c.times else None for c in convs]).alias("started_at"),
            _micros([max(c.times) if c.times else None for c in convs]).alias("ended_at"),
        )
        messages = self._frame(
            "messages",
            {**self._messages, "timestamp": [None] * len(self._messages["timestamp"])},
            schema.MESSAGES,
        ).with_columns(
            schema.message_id_expr(), _micros(self._messages["timestamp"]).alias("timestamp")
        )
        blocks = self._frame("blocks", self._blocks, schema.BLOCKS)
        files = self._frame("files", self._files, schema.FILES)
        queries = self._frame("queries", self._queries, schema.QUERIES) if self._queries else None
        return Corpus(  # the skipped frame last: building the others may add to it
            conversations=conversations,
            messages=messages,
            blocks=blocks,
            report=LoadReport(
                files=files, skipped=self._frame("skipped", self._skipped, schema.SKIPPED)
            ),
            queries=queries,
        )

    def _frame(self, name: str, data: Any, frame_schema: schema.Schema) -> pl.DataFrame:
        """``schema.frame(data)``; strings polars cannot hold (lone surrogates) replaced and noted.

        Lone surrogates reach here from a file name that is not UTF-8 (Python decodes it with
        surrogate escapes), kept whole by :func:`convlab.paths.path_text` (``text_path`` opens
        it), or from half a surrogate pair escaped in JSON, which the standard library's parser
        accepts, in an id or a title; block text is checked earlier, by line.
        """
        try:
            return schema.frame(data, frame_schema)
        except UnicodeEncodeError:
            if isinstance(data, dict) and "source_path" in data:  # file names, kept whole
                data = {**data, "source_path": [_path_text(p) for p in data["source_path"]]}
                with contextlib.suppress(UnicodeEncodeError):
                    return schema.frame(data, frame_schema)
            cleaned = _without_surrogates(data)
            if isinstance(data, dict):  # columns: name the ones repaired
                where = [f"{name}.{c}" for c in data if data[c] != cleaned[c]]
            else:  # rows (queries)
                where = [name]
            for w in where:
                self._note("", 0, f"lone surrogates replaced by U+FFFD in {w}")
            return schema.frame(cleaned, frame_schema)


_SURROGATES = re.compile("[\ud800-\udfff]")


def _path_text(path: str | None) -> str | None:
    from convlab.paths import path_text

    return None if path is None else path_text(path)


def _without_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings replaced by U+FFFD (lists, dicts too)."""
    if isinstance(value, str):
        return _SURROGATES.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_surrogates(v) for k, v in value.items()}
    return value


def _micros(values: list[int | None]) -> pl.Series:
    """Microseconds since the epoch as a UTC datetime column (fast: no Python datetimes)."""
    return pl.Series(values, dtype=pl.Int64).cast(schema.UTC_TIME)
