"""Claude Code session JSONL (``~/.claude/projects/<cwd slug>/<sessionId>.jsonl``).

What it handles (see shared/transcripts/FORMATS.md section 2):

- v2.x writes one content block per assistant line; lines sharing ``message.id`` are one message
  (their blocks merged in order, ``usage`` not summed);
- tool results arrive as ``type:user`` lines holding ``tool_result`` blocks: such a line becomes a
  ``tool`` message (``tool_result`` blocks, ``is_error`` kept);
- injected lines that are not a human prompt become ``system`` messages: ``isMeta`` lines,
  ``<system-reminder>``, ``<command-name>``/``<local-command-stdout>``, ``<task-notification>``,
  ``[Request interrupted ...]``, ``Caveat:`` notes, compaction summaries (``isCompactSummary``),
  ``system/local_command`` lines;
- records that are not messages (``summary`` -- its text becomes the title --,
  ``file-history-snapshot``, ``progress`` -- which duplicates sub-agent messages and is not
  re-emitted --, ``queue-operation``, ``last-prompt``, other ``system`` subtypes) are counted;
- sub-agent files (``agent-*.jsonl`` beside the session, v2.0.x, or
  ``<sessionId>/subagents/agent-*.jsonl``, v2.1.x) are conversations of their own, with
  ``parent_id`` = the session and every message ``is_sidechain``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from convlab.loaders.base import (
    REDACTED_THINKING,
    BlockRow,
    CorpusBuilder,
    junk_block,
    parse_time,
)
from convlab.loaders.files import open_regular
from convlab.loaders.jsontext import TOO_DEEP, json_text, too_deep_reason
from convlab.loaders.lines import parse_json_line
from convlab.loaders.registry import register_format

__all__ = ["ClaudeCodeReader"]

RECORD_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "file-history-snapshot",
        "progress",
        "queue-operation",
        "last-prompt",
    }
)
INJECTED_PREFIXES = (
    "<system-reminder>",
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<task-notification>",
    "[Request interrupted",
    "Caveat: The messages below",
    "<user-prompt-submit-hook>",
)


class _Block(msgspec.Struct):
    """A content block: the fields the reader uses, any JSON value in each."""

    type: Any = None
    text: Any = None
    thinking: Any = None
    name: Any = None
    input: Any = None
    content: Any = None
    is_error: Any = None


class _Message(msgspec.Struct):
    id: Any = None
    content: str | list[_Block] | None = None


class _Record(msgspec.Struct):
    """One line of a session file, the fields the reader uses (others are not decoded).

    Field names are Claude Code's own (camelCase).
    """

    type: Any = None
    sessionId: Any = None
    timestamp: Any = None
    isSidechain: Any = None
    uuid: Any = None
    isMeta: Any = None
    isCompactSummary: Any = None
    subtype: Any = None
    content: Any = None
    summary: Any = None
    message: _Message | None = None


_DECODE = msgspec.json.Decoder(_Record).decode
_BLOCK_FIELDS = _Block.__struct_fields__
_RECORD_FIELDS = tuple(f for f in _Record.__struct_fields__ if f != "message")


def _loose(rec: dict[str, Any]) -> _Record:
    """A record whose fields have unexpected types, as a :class:`_Record` holding them as they are.

    Struct constructors do not check types, so the reader meets the odd value (a message that
    is a string, content that is a number, a block that is not an object) and skips the record
    with its reason, exactly as for a well-typed one.
    """
    msg = rec.get("message")
    if isinstance(msg, dict):
        content = msg.get("content")
        if isinstance(content, list):
            content = [
                _Block(**{k: b.get(k) for k in _BLOCK_FIELDS}) if isinstance(b, dict) else b
                for b in content
            ]
        msg = _Message(id=msg.get("id"), content=content)
    return _Record(**{k: rec.get(k) for k in _RECORD_FIELDS}, message=msg)


def _records(path: Path, builder: CorpusBuilder) -> Iterator[tuple[int, _Record]]:
    """``(line number, record)`` for each record line of a session file.

    msgspec decodes straight into :class:`_Record`, skipping the fields the reader never uses
    (twice as fast as a dict per line); a line it refuses is parsed again by
    :func:`~convlab.loaders.base.parse_json_line`, which skips it with its reason or hands back
    an object with odd field types for :func:`_loose`.
    """
    decode = _DECODE
    with open_regular(path) as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                rec = decode(raw)
            except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError):
                obj = parse_json_line(raw, path, number, builder)
                if obj is None:
                    continue
                rec = _loose(obj)
            yield number, rec


@dataclass(slots=True)
class _Pending:
    """A message not yet handed to the builder (assistant lines are merged by message id)."""

    role: str
    blocks: list[BlockRow]
    line: int
    timestamp: datetime | None
    real: bool = False
    sidechain: bool = False
    external_id: str | None = None
    message_id: str | None = None
    followers: list[_Pending] = field(default_factory=list)


def _text_of(content: Any) -> str:
    """The text of message or tool-result content: a string, or its text blocks joined.

    Blocks are :class:`_Block` (decoded lines) or dicts (a tool result's nested content).
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for b in content:
        if isinstance(b, _Block):
            kind, text = b.type, b.text
        elif isinstance(b, dict):
            kind, text = b.get("type"), b.get("text")
        else:
            continue
        if kind == "text" and isinstance(text, str):
            parts.append(text)
    return "\n".join(parts)


_row = tuple.__new__  # BlockRow(...) without NamedTuple's Python-level __new__ (2x faster)


def _skipper(builder: CorpusBuilder, path: Path, line: int, what: str) -> Callable[[str], None]:
    """A ``junk`` callback: each reason a counted skip of ``line`` (a LoadError when strict)."""
    return lambda why: builder.skip(path, line, f"{what}: {why}")


def _blocks(content: list[Any], junk: Callable[[str], None]) -> list[BlockRow]:
    """Block rows of a message's content list; a string is a text block, other junk a skip."""
    out: list[BlockRow] = []
    for i, b in enumerate(content):
        if not isinstance(b, _Block):
            if isinstance(b, str):
                if b.strip():
                    out.append(BlockRow("text", b))
            else:
                junk(junk_block(i, b))
            continue
        t = b.type
        if t == "text":
            text = b.text
            if isinstance(text, str) and text and not text.isspace():
                out.append(_row(BlockRow, ("text", text, None, None, False)))
        elif t == "tool_use":
            tool_input = b.input
            out.append(
                _row(
                    BlockRow,
                    (
                        "tool_call",
                        "",
                        str(b.name or ""),
                        json_text({} if tool_input is None else tool_input),
                        False,
                    ),
                )
            )
        elif t == "tool_result":
            text = _text_of(b.content)
            out.append(_row(BlockRow, ("tool_result", text, None, None, bool(b.is_error))))
        elif t == "thinking":
            text = b.thinking
            if isinstance(text, str) and text.strip():
                out.append(BlockRow("thinking", text))
        elif t == "redacted_thinking":
            out.append(REDACTED_THINKING)
        elif t == "image":
            out.append(BlockRow("image", ""))
        else:
            other = b.text
            out.append(BlockRow("other", other if isinstance(other, str) else ""))
    return out


@register_format
class ClaudeCodeReader:
    """Reader for Claude Code session files and their sub-agent files."""

    name = "claude_code"

    def sniff(self, path: Path, head: bytes) -> bool:
        """A JSONL file whose first records carry Claude Code's fields."""
        if path.suffix.lower() != ".jsonl":
            return False
        text = head.decode("utf-8", "ignore")
        if '"sessionId"' in text and ('"parentUuid"' in text or '"uuid"' in text):
            return True
        first = text.lstrip().split("\n", 1)[0]
        return first.startswith('{"type":"summary"') or '"leafUuid"' in first

    def companion(self, path: Path) -> bool:
        """Claude Code has no side files that are read with a session."""
        return False

    def read(self, path: Path, builder: CorpusBuilder) -> int:
        """Read one session or sub-agent file."""
        is_agent = path.name.startswith("agent-")
        spath = str(path)  # one string for every row of this file
        conv: str | None = None
        title: str | None = None
        parent: str | None = None
        pending: _Pending | None = None
        lines = 0

        def open_conv(session: str | None) -> str:
            nonlocal conv, parent
            if conv is None:
                if is_agent:
                    conv = f"{session or path.parent.name}:{path.stem}"
                    parent = session or (
                        path.parent.parent.name if path.parent.name == "subagents" else None
                    )
                else:
                    conv = session or path.stem
                builder.conversation(
                    conv, source_format=self.name, source_path=path, kind="chat", parent_id=parent
                )
            return conv

        def flush() -> None:
            nonlocal pending
            if pending is None:
                return
            cid = open_conv(None)
            for p in (pending, *pending.followers):
                builder.message_or_record(
                    cid,
                    p.role,
                    p.blocks,
                    source_path=spath,
                    source_line=p.line,
                    timestamp=p.timestamp,
                    is_real_user=p.real,
                    is_sidechain=p.sidechain,
                    external_id=p.external_id,
                )
            pending = None

        for number, rec in _records(path, builder):
            lines = number
            kind = rec.type
            if not isinstance(kind, str):
                builder.skip(path, number, "record without a type")
                continue
            if kind == "summary":
                if title is None and isinstance(rec.summary, str):
                    title = rec.summary
                builder.record()
                continue
            if kind not in ("user", "assistant", "system"):
                builder.record()
                continue
            if conv is None:
                session = rec.sessionId
                open_conv(session if isinstance(session, str) else None)
            when = parse_time(rec.timestamp)
            side = bool(rec.isSidechain) or is_agent
            uuid = rec.uuid
            if type(uuid) is not str:
                uuid = None
            if kind == "system":
                content = rec.content
                if rec.subtype == "local_command" and isinstance(content, str):
                    flush()
                    pending = _Pending(
                        "system",
                        [BlockRow("text", content)],
                        number,
                        when,
                        sidechain=side,
                        external_id=uuid,
                    )
                else:
                    builder.record()
                continue
            msg = rec.message
            if not isinstance(msg, _Message):
                builder.skip(path, number, f"{kind} record without a message object")
                continue
            content = msg.content
            if isinstance(content, str):
                content = [_Block(type="text", text=content)]
            if not isinstance(content, list):
                builder.skip(path, number, f"{kind} message content is not a string or a list")
                continue
            try:
                blocks = _blocks(content, _skipper(builder, path, number, f"{kind} message"))
            except TOO_DEEP as exc:  # a tool input nested too deeply to write back as text
                builder.skip(path, number, too_deep_reason(exc))
                continue
            if kind == "assistant":
                mid = msg.id
                if type(mid) is not str:
                    mid = None
                if (
                    pending is not None
                    and pending.role == "assistant"
                    and mid
                    and (pending.message_id == mid)
                ):
                    pending.blocks.extend(blocks)
                    builder.record()
                    continue
                flush()
                pending = _Pending(
                    "assistant",
                    blocks,
                    number,
                    when,
                    sidechain=side,
                    external_id=uuid,
                    message_id=mid,
                )
                continue
            # user lines: a tool-result carrier, an injected line, or a human prompt
            types = {b.block_type for b in blocks}
            if (
                "tool_result" in types
                and types <= {"tool_result", "image", "text"}
                and not (types & {"text"} and not types - {"text", "image"})
            ):
                carrier = _Pending("tool", blocks, number, when, sidechain=side, external_id=uuid)
                if pending is not None and pending.role == "assistant":
                    pending.followers.append(carrier)
                else:
                    flush()
                    pending = carrier
                continue
            flush()
            text = _text_of(content).lstrip()
            injected = (
                bool(rec.isMeta)
                or bool(rec.isCompactSummary)
                or text.startswith(INJECTED_PREFIXES)
                or (side and text.strip() == "Warmup")
            )
            real = not injected and "text" in types
            pending = _Pending(
                "system" if injected else "user",
                blocks,
                number,
                when,
                real=real,
                sidechain=side,
                external_id=uuid,
            )
        flush()
        if conv is not None and title:
            builder.conversation(conv, source_format=self.name, source_path=path, title=title)
        elif conv is None and title:
            builder.record()
        return lines
