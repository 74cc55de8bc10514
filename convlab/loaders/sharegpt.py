"""ShareGPT and its variants (FastChat, LLaMA-Factory).

Canonical: ``[{"id"?, "conversations": [{"from": "human"|"gpt"|"system"|"function_call"|
"observation", "value": str}], "system"?, "tools"?}]``. Variants: ``messages`` with ``role`` and
``content``; LLaMA-Factory typed blocks ``{"type": "text"|"reasoning"|"tool_call", "value"}``;
JSON list or JSONL. ``function_call`` turns are assistant tool calls, ``observation`` turns tool
results; ``<image>`` placeholders stay in the text.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from convlab.loaders.base import CorpusBuilder
from convlab.loaders.blocks import BlockRow, junk_block
from convlab.loaders.jsontext import TOO_DEEP, json_head, json_text, parse_json_or, too_deep_reason
from convlab.loaders.lines import iter_json_records, read_each
from convlab.loaders.registry import register_format

__all__ = ["ShareGPTReader"]

ROLES = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "chatgpt": "assistant",
    "bard": "assistant",
    "system": "system",
    "function_call": "assistant",
    "observation": "tool",
    "tool": "tool",
    "function": "tool",
}


_NOT_JSON = object()


def _call(value: str) -> BlockRow:
    data = parse_json_or(value, _NOT_JSON)
    if data is _NOT_JSON:
        return BlockRow(
            "tool_call", "", tool_name="function", tool_input=json_text({"input": value})
        )
    if isinstance(data, dict):
        return BlockRow(
            "tool_call",
            "",
            tool_name=str(data.get("name") or "function"),
            tool_input=json_text(data.get("arguments", {})),
        )
    return BlockRow("tool_call", "", tool_name="function", tool_input=json_text(data))


def _blocks(role_key: str, value: Any, junk: Callable[[str], None]) -> list[BlockRow] | None:
    if isinstance(value, str):
        if role_key == "function_call":
            return [_call(value)]
        if role_key == "observation":
            return [BlockRow("tool_result", value)]
        return [BlockRow("text", value)] if value.strip() else []
    if isinstance(value, list):
        out = []
        for i, b in enumerate(value):
            if not isinstance(b, dict):
                junk(junk_block(i, b))
                continue
            t, v = b.get("type"), b.get("value", b.get("text", ""))
            v = v if isinstance(v, str) else json_text(v)
            if t == "reasoning":
                out.append(BlockRow("thinking", v))
            elif t == "tool_call":
                out.append(_call(v))
            elif t in ("text", None):
                if v.strip():
                    out.append(
                        BlockRow(
                            "tool_result" if role_key in ("observation", "tool") else "text", v
                        )
                    )
            else:
                out.append(BlockRow("other", v))
        return out
    return None


@register_format(priority=90)
class ShareGPTReader:
    """Reader for ShareGPT-style datasets."""

    name = "sharegpt"

    def sniff(self, path: Path, head: bytes) -> bool:
        """``conversations`` with ``from``/``value``, or typed blocks with ``value``."""
        text = json_head(path, head)
        if text is None:
            return False
        return (b'"from"' in text and b'"value"' in text) or (
            b'"messages"' in text and b'"value"' in text and b'"type"' in text
        )

    def companion(self, path: Path) -> bool:
        """No side files."""
        return False

    def read(self, path: Path, builder: CorpusBuilder) -> int:
        """Read every record of the file."""
        return read_each(
            path,
            builder,
            iter_json_records(path, builder),
            lambda i, line, rec: self._record(path, builder, i, line, rec),
        )

    def _record(self, path: Path, builder: CorpusBuilder, i: int, line: int, rec: Any) -> None:
        if not isinstance(rec, dict):
            builder.skip(path, line, "record is not an object")
            return
        turns = rec.get("conversations", rec.get("messages"))
        if not isinstance(turns, list):
            builder.skip(path, line, "record without conversations or messages")
            return
        cid = str(rec.get("id") or f"{path.stem}-{i}")
        builder.conversation(cid, source_format=self.name, source_path=path)
        if isinstance(rec.get("system"), str) and rec["system"].strip():
            builder.message(
                cid,
                "system",
                [BlockRow("text", rec["system"])],
                source_path=path,
                source_line=line,
            )
        for j, t in enumerate(turns):
            try:
                self._turn(path, builder, cid, line, j, t)
            except TOO_DEEP as exc:  # e.g. a function call nested too deeply to parse
                builder.skip(path, line, f"turn {j}: {too_deep_reason(exc)}")

    def _turn(
        self, path: Path, builder: CorpusBuilder, cid: str, line: int, j: int, t: Any
    ) -> None:
        if not isinstance(t, dict):
            builder.skip(path, line, f"turn {j} is not an object")
            return
        key = t.get("from", t.get("role"))
        role = ROLES.get(str(key))
        if role is None:
            builder.skip(path, line, f"turn {j} has unknown speaker {key!r}")
            return
        blocks = _blocks(
            str(key),
            t.get("value", t.get("content")),
            lambda why: builder.skip(path, line, f"turn {j}: {why}"),
        )
        if blocks is None:
            builder.skip(path, line, f"turn {j} has no text")
            return
        builder.message_or_record(
            cid,
            role,
            blocks,
            source_path=path,
            source_line=line,
            is_real_user=role == "user",
        )
