"""Claude Code session lines decoded: records, their content blocks, slash commands.

What a line of a session file holds, for :mod:`convlab.loaders.claude_code` (which decides what
the records mean): :func:`records` decodes each line into a :class:`Record` of the fields the
reader uses, :func:`block_rows` turns a message's content into block rows, :func:`text_of` joins its
text, :func:`command_prompt` reads a typed slash command.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from convlab.files import open_regular
from convlab.loaders.base import CorpusBuilder
from convlab.loaders.blocks import REDACTED_THINKING, BlockRow, junk_block
from convlab.loaders.jsontext import json_text
from convlab.loaders.lines import parse_json_line

__all__ = [
    "INJECTED_PREFIXES",
    "RECORD_TYPES",
    "Block",
    "Message",
    "Record",
    "block_rows",
    "command_prompt",
    "records",
    "text_of",
]

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
    "<command-name>",  # a slash command without arguments (one with them is a prompt)
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<task-notification>",
    "[Request interrupted",
    "Caveat: The messages below",
    "<user-prompt-submit-hook>",
)
_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)


class Block(msgspec.Struct):
    """A content block: the fields the reader uses, any JSON value in each."""

    type: Any = None
    text: Any = None
    thinking: Any = None
    name: Any = None
    input: Any = None
    content: Any = None
    is_error: Any = None


class Message(msgspec.Struct):
    """A record's ``message``: its id (shared by the lines of one assistant message), content."""

    id: Any = None
    content: str | list[Block] | None = None


class Record(msgspec.Struct):
    """One line of a session file, the fields the reader uses (others are not decoded).

    Field names are Claude Code's own (camelCase).
    """

    type: Any = None
    sessionId: Any = None
    timestamp: Any = None
    isSidechain: Any = None
    agentId: Any = None
    cwd: Any = None
    uuid: Any = None
    isMeta: Any = None
    isCompactSummary: Any = None
    subtype: Any = None
    content: Any = None
    summary: Any = None
    message: Message | None = None


_DECODE = msgspec.json.Decoder(Record).decode
_BLOCK_FIELDS = Block.__struct_fields__
_RECORD_FIELDS = tuple(f for f in Record.__struct_fields__ if f != "message")


def _loose(rec: dict[str, Any]) -> Record:
    """A record whose fields have unexpected types, as a :class:`Record` holding them as they are.

    Struct constructors do not check types, so the reader meets the odd value (a message that
    is a string, content that is a number, a block that is not an object) and skips the record
    with its reason, exactly as for a well-typed one.
    """
    msg = rec.get("message")
    if isinstance(msg, dict):
        content = msg.get("content")
        if isinstance(content, list):
            content = [
                Block(**{k: b.get(k) for k in _BLOCK_FIELDS}) if isinstance(b, dict) else b
                for b in content
            ]
        msg = Message(id=msg.get("id"), content=content)
    return Record(**{k: rec.get(k) for k in _RECORD_FIELDS}, message=msg)


def records(path: Path, builder: CorpusBuilder) -> Iterator[tuple[int, Record]]:
    """``(line number, record)`` for each record line of a session file.

    msgspec decodes straight into :class:`Record`, skipping the fields the reader never uses
    (twice as fast as a dict per line); a line it refuses is parsed again by
    :func:`~convlab.loaders.lines.parse_json_line`, which skips it with its reason or hands back
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


def text_of(content: Any) -> str:
    """The text of message or tool-result content: a string, or its text blocks joined.

    Blocks are :class:`Block` (decoded lines) or dicts (a tool result's nested content).
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for b in content:
        if isinstance(b, Block):
            kind, text = b.type, b.text
        elif isinstance(b, dict):
            kind, text = b.get("type"), b.get("text")
        else:
            continue
        if kind == "text" and isinstance(text, str):
            parts.append(text)
    return "\n".join(parts)


_row = tuple.__new__  # BlockRow(...) without NamedTuple's Python-level __new__ (2x faster)


def block_rows(content: list[Any], junk: Callable[[str], None]) -> list[BlockRow]:
    """The block rows of a message's content: blank text dropped, tool calls as JSON text.

    A string in the list is a text block; anything else that is not a block (a number, null, an
    array) is junk, its reason (:func:`~convlab.loaders.blocks.junk_block`) handed to ``junk``.
    """
    out: list[BlockRow] = []
    for i, b in enumerate(content):
        if not isinstance(b, Block):
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
            text = text_of(b.content)
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


def command_prompt(text: str) -> str | None:
    r"""The prompt a slash command carries: ``/name args``; None for no command or no arguments.

    Claude Code writes a typed command as ``<command-name>``, ``<command-message>`` and
    ``<command-args>`` elements (in either order); the arguments are what the person asked.

    Example:
        >>> command_prompt(
        ...     "<command-name>/compact</command-name>\n  <command-message>compact"
        ...     "</command-message>\n  <command-args>and continue</command-args>"
        ... )
        '/compact and continue'
        >>> command_prompt("<command-name>/mcp</command-name><command-args></command-args>")
    """
    if not text.startswith(("<command-name>", "<command-message>")):
        return None
    name, args = _COMMAND_NAME.search(text), _COMMAND_ARGS.search(text)
    if name is None or args is None or not args.group(1).strip():
        return None
    return f"{name.group(1).strip()} {args.group(1).strip()}"
