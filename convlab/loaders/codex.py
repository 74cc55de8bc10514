"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``), both eras.

Envelope era: ``{timestamp, type, payload}`` lines; ``session_meta`` gives the session id,
``response_item`` carries messages, reasoning, function calls and their outputs, ``compacted``
a compaction summary, ``event_msg`` mostly duplicates. Bare era (before Sept 2025): a first line
``{id, timestamp, instructions}``, bare items, ``{"record_type": "state"}`` lines.

Normalisation: the human prompt is a role-user message that is not injected context
(``<environment_context>``, AGENTS.md instructions, ``<user_instructions>``, ``<skill>``,
``<turn_aborted>``), or an ``event_msg/user_message``; the same prompt arriving from both is kept
once. ``agent_message``/``agent_reasoning`` events duplicate response items and are counted, not
re-emitted. Developer messages and injected context are ``system``; reasoning summaries are
``thinking``; function, custom-tool and shell calls are ``tool_call`` blocks and their outputs
``tool`` messages.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from convlab.loaders.base import CorpusBuilder
from convlab.loaders.blocks import BlockRow, junk_block
from convlab.loaders.jsontext import TOO_DEEP, json_text, parse_json_or, too_deep_reason
from convlab.loaders.lines import iter_json_lines
from convlab.loaders.registry import register_format
from convlab.loaders.times import parse_time

__all__ = ["CodexReader"]

INJECTED = (
    "<environment_context>",
    "# AGENTS.md",
    "<INSTRUCTIONS>",
    "<user_instructions>",
    "<skill>",
    "<turn_aborted>",
    "<permissions",
    "<user_shell_command>",
)
ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
    }
)


def _content_text(content: Any, junk: Callable[[str], None] | None = None) -> str:
    """The text of message content: a string, or its items' texts (junk items: ``junk``)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for i, c in enumerate(content):
        if isinstance(c, dict):
            if isinstance(c.get("text"), str):
                texts.append(c["text"])
        elif isinstance(c, str):
            texts.append(c)
        elif junk is not None:
            junk(junk_block(i, c))
    return "\n".join(texts)


def _args(value: Any) -> str:
    if isinstance(value, str):
        return json_text(parse_json_or(value, {"input": value}))
    return json_text(value if value is not None else {})


@register_format(priority=40)
class CodexReader:
    """Reader for Codex CLI rollout files."""

    name = "codex"

    def sniff(self, path: Path, head: bytes) -> bool:
        """A JSONL file starting with ``session_meta`` or the bare era's first line."""
        if path.suffix.lower() != ".jsonl":
            return False
        first = head.decode("utf-8", "ignore").lstrip().split("\n", 1)[0]
        if '"type":"session_meta"' in first.replace(" ", ""):
            return True
        return '"instructions"' in first and '"id"' in first and '"sessionId"' not in first

    def companion(self, path: Path) -> bool:
        """Codex has no side files."""
        return False

    def read(self, path: Path, builder: CorpusBuilder) -> int:
        """Read one rollout."""
        conv: str | None = None
        last_prompt: str | None = None
        lines = 0

        def ensure(cid: str | None = None) -> str:
            nonlocal conv
            if conv is None:
                conv = cid or path.stem
                builder.conversation(conv, source_format=self.name, source_path=path)
            return conv

        def emit(
            role: str,
            blocks: list[BlockRow],
            number: int,
            when: Any,
            real: bool = False,
            speaker: str | None = None,
        ) -> None:
            nonlocal last_prompt
            if role != "user" and role == "assistant":
                last_prompt = None
            builder.message(
                ensure(),
                role,
                blocks,
                source_path=path,
                source_line=number,
                timestamp=when,
                is_real_user=real,
                speaker=speaker,
            )

        def prompt(text: str, number: int, when: Any) -> None:
            nonlocal last_prompt
            if text.lstrip().startswith(INJECTED):
                emit("system", [BlockRow("text", text)], number, when)
                return
            if last_prompt is not None and text.strip() == last_prompt:
                builder.record()  # the same prompt from event_msg and response_item
                return
            emit("user", [BlockRow("text", text)], number, when, real=bool(text.strip()))
            last_prompt = text.strip()

        for number, rec in iter_json_lines(path, builder):
            lines = number
            try:
                when = parse_time(rec.get("timestamp"))
                kind = rec.get("type")
                payload = rec.get("payload")
                if kind is not None and not isinstance(kind, str):
                    builder.skip(path, number, f"record type is not text ({type(kind).__name__})")
                    continue
                if kind is None and "record_type" in rec:
                    builder.record()
                    continue
                if kind is None and number == 1 and "id" in rec:  # bare era header
                    ensure(str(rec["id"]))
                    builder.record()
                    continue
                if kind in ITEM_TYPES and payload is None:  # bare era item
                    kind, payload = "response_item", rec
                if not isinstance(payload, dict):
                    builder.skip(path, number, f"record of type {kind!r} without a payload object")
                    continue
                if kind == "session_meta":
                    cid = ensure(str(payload.get("id") or path.stem))
                    cwd = payload.get("cwd")
                    if isinstance(cwd, str) and cwd:  # the session's project
                        builder.conversation(
                            cid, source_format=self.name, source_path=path, project=cwd
                        )
                    builder.record()
                elif kind == "compacted":
                    text = payload.get("message")
                    if isinstance(text, str) and text.strip():
                        emit("system", [BlockRow("text", text)], number, when)
                    else:
                        builder.record()
                elif kind == "event_msg":
                    if payload.get("type") == "user_message" and isinstance(
                        payload.get("message"), str
                    ):
                        prompt(payload["message"], number, when)
                    else:
                        builder.record()
                elif kind == "response_item":
                    self._item(payload, number, when, builder, emit, prompt, path)
                else:
                    builder.record()
            except TOO_DEEP as exc:  # e.g. tool arguments nested too deeply to parse
                builder.skip(path, number, too_deep_reason(exc))
        ensure()
        return lines

    def _item(
        self,
        p: dict[str, Any],
        number: int,
        when: Any,
        builder: CorpusBuilder,
        emit: Any,
        prompt: Any,
        path: Path,
    ) -> None:
        t = p.get("type")
        if t == "message":
            role = p.get("role")
            text = _content_text(
                p.get("content"), lambda why: builder.skip(path, number, f"message: {why}")
            )
            if role == "user":
                prompt(text, number, when)
            elif role == "assistant":
                if text.strip():
                    emit("assistant", [BlockRow("text", text)], number, when)
                else:
                    builder.record()
            elif role in ("developer", "system"):
                emit("system", [BlockRow("text", text)], number, when)
            else:
                builder.skip(path, number, f"message with unknown role {role!r}")
        elif t == "reasoning":
            summary = p.get("summary")
            text = _content_text(summary) if isinstance(summary, list) else ""
            if text.strip():
                emit("assistant", [BlockRow("thinking", text)], number, when)
            else:
                builder.record()
        elif t in ("function_call", "custom_tool_call", "local_shell_call"):
            name = p.get("name") or ("shell" if t == "local_shell_call" else "tool")
            args = p.get("arguments", p.get("input", p.get("action")))
            emit(
                "assistant",
                [BlockRow("tool_call", "", tool_name=str(name), tool_input=_args(args))],
                number,
                when,
            )
        elif t in ("function_call_output", "custom_tool_call_output"):
            out = p.get("output")
            if isinstance(out, dict):
                out = out.get("output", json_text(out))
            emit(
                "tool",
                [BlockRow("tool_result", out if isinstance(out, str) else json_text(out))],
                number,
                when,
            )
        elif t == "web_search_call":
            emit(
                "assistant",
                [
                    BlockRow(
                        "tool_call", "", tool_name="web_search", tool_input=_args(p.get("action"))
                    )
                ],
                number,
                when,
            )
        else:
            builder.record()
