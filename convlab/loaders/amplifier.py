"""Amplifier session folders: ``sessions/<id>/transcript.jsonl`` + ``metadata.json``.

What it handles (shared/transcripts/FORMATS.md section 1): string or block content;
both ``tool_calls`` shapes (``[{id, tool, arguments:{}}]`` and OpenAI's
``{id, type:"function", function:{name, arguments:"json"}}``); the ``thinking_block`` field that
duplicates the first thinking block (kept once); ``role: tool`` results (``tool`` messages with a
``tool_result`` block); hook injections (user messages starting with ``<system-reminder>``) and
cancel notices as ``system`` messages; timestamps top-level or in ``metadata.timestamp``.
``metadata.json`` gives the session id, the name (title), ``created`` and the parent of a sub-agent
or fork; it and ``events.jsonl`` / ``*.backup`` are companion files, never read on their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from convlab.errors import LoadError
from convlab.files import CONFIG
from convlab.loaders.base import CorpusBuilder
from convlab.loaders.blocks import REDACTED_THINKING, BlockRow, content_blocks, other_block
from convlab.loaders.files import load_json_file
from convlab.loaders.jsontext import TOO_DEEP, json_text, parse_json_or, too_deep_reason
from convlab.loaders.lines import iter_json_lines, read_each
from convlab.loaders.registry import register_format
from convlab.loaders.times import parse_time

__all__ = ["AmplifierReader"]

INJECTED = ("<system-reminder>", "The previous operation was cancelled")


def _tool_call(call: Any) -> BlockRow | None:
    if not isinstance(call, dict):
        return None
    fn = call.get("function")
    if isinstance(fn, dict):  # OpenAI shape: arguments is JSON text
        args = fn.get("arguments")
        parsed = parse_json_or(args, args) if isinstance(args, str) else args
        return BlockRow(
            "tool_call",
            "",
            tool_name=str(fn.get("name") or ""),
            tool_input=json_text(parsed if parsed is not None else {}),
        )
    name = call.get("tool") or call.get("name")
    return BlockRow(
        "tool_call",
        "",
        tool_name=str(name or ""),
        tool_input=json_text(call.get("arguments", call.get("input", {}))),
    )


def _block(t: Any, b: dict[str, Any]) -> BlockRow | None:
    """One typed content block (see :func:`convlab.loaders.blocks.content_blocks`)."""
    if t == "text" and isinstance(b.get("text"), str):
        return BlockRow("text", b["text"]) if b["text"].strip() else None
    if t in ("thinking", "reasoning"):
        text = b.get("thinking") or b.get("content") or b.get("summary") or ""
        return BlockRow("thinking", text if isinstance(text, str) else json_text(text))
    if t == "redacted_thinking":
        return REDACTED_THINKING
    if t == "tool_call":
        return _tool_call(b)
    if t == "tool_result":
        output = b.get("output", "")
        return BlockRow("tool_result", output if isinstance(output, str) else json_text(output))
    if t == "image":
        return BlockRow("image", "")
    return other_block(b)


@register_format(priority=10)
class AmplifierReader:
    """Reader for Amplifier ``transcript.jsonl`` files (with ``metadata.json`` beside them)."""

    name = "amplifier"

    def sniff(self, path: Path, head: bytes) -> bool:
        """A ``transcript.jsonl`` whose lines carry ``role``."""
        return path.name == "transcript.jsonl" and b'"role"' in head

    def companion(self, path: Path) -> bool:
        """metadata.json, events.jsonl and backups inside a session folder."""
        if not (path.parent / "transcript.jsonl").exists() or path.name == "transcript.jsonl":
            return False
        return path.name in ("metadata.json", "events.jsonl") or path.suffix == ".backup"

    def read(self, path: Path, builder: CorpusBuilder) -> int:
        """Read one session's transcript with its metadata."""
        meta = _metadata(path, builder)
        cid = meta.session_id
        builder.conversation(
            cid,
            source_format=self.name,
            source_path=path,
            title=meta.title,
            kind="chat",
            parent_conversation_id=meta.parent_conversation_id,
            agent_id=meta.agent_name,
            project=meta.working_dir,
        )
        return read_each(
            path,
            builder,
            iter_json_lines(path, builder),
            lambda _, number, rec: self._record(path, builder, cid, meta.is_sub_agent, number, rec),
        )

    def _record(
        self, path: Path, builder: CorpusBuilder, cid: str, sub: bool, number: int, rec: Any
    ) -> None:
        role = rec.get("role")
        if role in ("system", "developer"):
            role = "system"
        if role not in ("user", "assistant", "tool", "system"):
            builder.skip(path, number, f"unknown role {role!r}")
            return
        md: dict[str, Any] = rec["metadata"] if isinstance(rec.get("metadata"), dict) else {}
        when = parse_time(rec.get("timestamp")) or parse_time(md.get("timestamp"))
        if role == "tool":
            content = rec.get("content")
            text = content if isinstance(content, str) else json_text(content)
            builder.message(
                cid,
                "tool",
                [
                    BlockRow(
                        "tool_result",
                        text,
                        tool_name=rec.get("name") if isinstance(rec.get("name"), str) else None,
                    )
                ],
                source_path=path,
                source_line=number,
                timestamp=when,
                is_sidechain=sub,
                speaker=rec.get("name") if isinstance(rec.get("name"), str) else None,
            )
            return
        blocks = content_blocks(
            rec.get("content"), _block, lambda why: builder.skip(path, number, why)
        )
        if blocks is None:
            builder.skip(path, number, "content is not a string or a list")
            return
        if role == "assistant":
            tb = rec.get("thinking_block")
            if isinstance(tb, dict) and not any(b.block_type == "thinking" for b in blocks):
                text = tb.get("thinking") or tb.get("content") or ""
                if isinstance(text, str) and text:
                    blocks.insert(0, BlockRow("thinking", text))
            calls = rec.get("tool_calls")
            if isinstance(calls, list):
                for call in calls:
                    row = _tool_call(call)
                    if row is not None:
                        blocks.append(row)
        text = "".join(b.text for b in blocks if b.block_type == "text").lstrip()
        real = False
        if role == "user":
            if rec.get("tool_call_id") is not None or text.startswith(INJECTED):
                role = "system"
            elif any(b.block_type == "tool_result" for b in blocks):
                role = "tool"
            else:
                real = bool(text)
        builder.message_or_record(
            cid,
            role,
            blocks,
            source_path=path,
            source_line=number,
            timestamp=when,
            is_real_user=real,
            is_sidechain=sub,
        )


class _Meta(NamedTuple):
    session_id: str
    title: str | None
    parent_conversation_id: str | None
    is_sub_agent: bool
    agent_name: str | None = None  # a sub-agent's agent_name
    working_dir: str | None = None  # the session's project


def _metadata(path: Path, builder: CorpusBuilder) -> _Meta:
    """The session's ``metadata.json`` beside ``path``; one that cannot be read is a skip."""
    fallback = _Meta(path.parent.name, None, None, False)
    mpath = path.parent / "metadata.json"
    if not mpath.exists():
        return fallback
    try:
        loaded = load_json_file(mpath, limit=CONFIG)
    except LoadError as exc:  # invalid, too deep, unreadable, a FIFO: named, never opened
        builder.skip(exc.path, exc.line, exc.reason)
        return fallback
    if not isinstance(loaded, dict):
        return fallback
    try:
        parent = loaded.get("parent_id")
        agent, cwd = loaded.get("agent_name"), loaded.get("working_dir")
        return _Meta(
            str(loaded.get("session_id") or path.parent.name),
            loaded["name"] if isinstance(loaded.get("name"), str) else None,
            str(parent) if parent else None,
            parent is not None and agent is not None,
            str(agent) if parent is not None and agent is not None else None,
            cwd if isinstance(cwd, str) and cwd else None,
        )
    except TOO_DEEP as exc:  # an id nested too deeply to turn into text
        builder.skip(mpath, 1, too_deep_reason(exc))
        return fallback
