"""Plain message lists: OpenAI chat messages and Anthropic Messages API conversations.

Shapes accepted, as a JSON file or JSONL (one conversation per line): a list of messages,
``{"messages": [...]}`` (OpenAI fine-tune records may also carry ``tools``), or a list of such
objects. OpenAI: roles system/developer/user/assistant/tool, content a string, null or a list of
parts (``text``, ``image_url``, ...), ``tool_calls`` with JSON-text arguments, ``role: tool``
results. Anthropic: a top-level ``system`` (string or text blocks) outside ``messages``, roles
user/assistant only, blocks text/image/document/thinking/redacted_thinking/tool_use/tool_result;
a user message holding only ``tool_result`` blocks is a ``tool`` message.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from convlab.loaders.base import CorpusBuilder
from convlab.loaders.blocks import REDACTED_THINKING, BlockRow, content_blocks, other_block
from convlab.loaders.jsontext import (
    TOO_DEEP,
    json_head,
    json_text,
    parse_json_or,
    too_deep_reason,
)
from convlab.loaders.lines import iter_json_records, read_each
from convlab.loaders.registry import register_format

__all__ = ["AnthropicReader", "OpenAIReader"]


def _block(t: Any, b: dict[str, Any]) -> BlockRow | None:
    """One typed content block (see :func:`convlab.loaders.blocks.content_blocks`)."""
    if t in ("text", "input_text", "output_text"):
        text = b.get("text")
        return BlockRow("text", text) if isinstance(text, str) and text.strip() else None
    if t in ("image", "image_url", "input_image", "document", "input_audio"):
        return BlockRow("image" if "image" in str(t) else "other")
    if t == "thinking":
        return BlockRow("thinking", str(b.get("thinking", "")))
    if t == "redacted_thinking":
        return REDACTED_THINKING
    if t in ("tool_use", "server_tool_use"):
        return BlockRow(
            "tool_call",
            "",
            tool_name=str(b.get("name") or ""),
            tool_input=json_text(b.get("input", {})),
        )
    if t == "tool_result":
        c = b.get("content")
        text = (
            c
            if isinstance(c, str)
            else "\n".join(x.get("text", "") for x in c or [] if isinstance(x, dict))
        )
        return BlockRow("tool_result", text, is_error=bool(b.get("is_error")))
    return other_block(b)


def _convert_blocks(
    content: Any, junk: Callable[[str], None] | None = None
) -> list[BlockRow] | None:
    return [] if content is None else content_blocks(content, _block, junk)


def _read(reader: Any, path: Path, builder: CorpusBuilder) -> int:
    return read_each(
        path,
        builder,
        iter_json_records(path, builder),
        lambda i, line, rec: _conversation(reader, path, builder, i, line, rec),
    )


def _conversation(
    reader: Any, path: Path, builder: CorpusBuilder, i: int, line: int, rec: Any
) -> None:
    """One conversation record (``i``-th of the file, at ``line``) into ``builder``."""
    messages = rec.get("messages") if isinstance(rec, dict) else None
    if not isinstance(messages, list):
        builder.skip(path, line, "conversation without a messages list")
        return
    cid = str(rec.get("id") or f"{path.stem}-{i}")
    builder.conversation(cid, source_format=reader.name, source_path=path)
    system = rec.get("system")
    if system:
        blocks = _convert_blocks(system, lambda why: builder.skip(path, line, f"system: {why}"))
        if blocks:
            builder.message(cid, "system", blocks, source_path=path, source_line=line)
    for j, m in enumerate(messages):
        try:
            _message(path, builder, cid, line, j, m)
        except TOO_DEEP as exc:  # e.g. tool arguments nested too deeply to parse
            builder.skip(path, line, f"message {j}: {too_deep_reason(exc)}")


def _message(path: Path, builder: CorpusBuilder, cid: str, line: int, j: int, m: Any) -> None:
    """Message ``j`` of conversation ``cid`` into ``builder``."""
    if not isinstance(m, dict):
        builder.skip(path, line, f"message {j} is not an object")
        return
    role = m.get("role")
    if role == "developer":
        role = "system"
    if role not in ("system", "user", "assistant", "tool"):
        builder.skip(path, line, f"message {j} has unknown role {role!r}")
        return
    blocks = _convert_blocks(
        m.get("content"), lambda why: builder.skip(path, line, f"message {j}: {why}")
    )
    if blocks is None:
        builder.skip(path, line, f"message {j} content is not a string, list or null")
        return
    if role == "tool":
        blocks = [
            BlockRow("tool_result", b.text) if b.block_type == "text" else b for b in blocks
        ] or [BlockRow("tool_result", "")]
    for call in m.get("tool_calls") or []:
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            args = fn.get("arguments")
            parsed = parse_json_or(args, {"arguments": args}) if isinstance(args, str) else args
            blocks.append(
                BlockRow(
                    "tool_call",
                    "",
                    tool_name=str(fn.get("name") or ""),
                    tool_input=json_text(parsed or {}),
                )
            )
    types = {b.block_type for b in blocks}
    if role == "user" and types and types <= {"tool_result", "image"}:
        role = "tool"
    builder.message_or_record(
        cid,
        role,
        blocks,
        source_path=path,
        source_line=line,
        is_real_user=role == "user" and "text" in types,
        speaker=m.get("name") if isinstance(m.get("name"), str) else None,
    )


@register_format(priority=70)
class AnthropicReader:
    """Anthropic Messages API conversations."""

    name = "anthropic"

    def sniff(self, path: Path, head: bytes) -> bool:
        """Messages with Anthropic's tool blocks, or a top-level system beside messages."""
        if path.suffix.lower() not in (".json", ".jsonl") or b'"messages"' not in head:
            return False
        return (
            b'"tool_use"' in head
            or b'"tool_result"' in head
            or (
                b'"system"' in head
                and b'"role": "system"' not in head
                and b'"role":"system"' not in head
            )
        )

    def companion(self, path: Path) -> bool:
        """No side files."""
        return False

    def read(self, path: Path, builder: CorpusBuilder) -> int:
        """Read every conversation in the file."""
        return _read(self, path, builder)


@register_format(priority=80)
class OpenAIReader:
    """OpenAI chat message lists and fine-tune JSONL."""

    name = "openai"

    def sniff(self, path: Path, head: bytes) -> bool:
        """Messages with role and content (and no ShareGPT or Claude Code fields)."""
        text = json_head(path, head)
        if text is None or any(k in text for k in (b'"sessionId"', b'"conversations"', b'"value"')):
            return False
        return b'"role"' in text and b'"content"' in text

    def companion(self, path: Path) -> bool:
        """No side files."""
        return False

    def read(self, path: Path, builder: CorpusBuilder) -> int:
        """Read every conversation in the file."""
        return _read(self, path, builder)
