"""ChatGPT export ``conversations.json``: the active branch of each conversation's tree.

The branch is walked from ``current_node`` up through ``parent`` to the root, so edits and
regenerations (sibling ``children``) are left out. Content types: ``text`` and
``multimodal_text`` (image parts become image blocks), ``code`` (a tool call), ``execution_output``
and role ``tool`` messages (tool results), ``thoughts`` and ``reasoning_recap`` (thinking),
``user_editable_context`` (custom instructions, ``system``). Empty hidden system nodes are counted,
not emitted; visually hidden messages become ``system``. Assistant messages with a recipient other
than ``all`` are tool calls.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from convlab.loaders.base import CorpusBuilder
from convlab.loaders.blocks import BlockRow, junk_block
from convlab.loaders.files import load_json_file
from convlab.loaders.jsontext import TOO_DEEP, json_text, too_deep_reason
from convlab.loaders.registry import register_format
from convlab.loaders.times import parse_time

__all__ = ["ChatGPTReader"]


def _parts(content: dict[str, Any], junk: Callable[[str], None]) -> list[BlockRow]:
    ctype = content.get("content_type")
    out: list[BlockRow] = []
    if ctype in ("text", "multimodal_text"):
        parts = content.get("parts") or []
        for i, part in enumerate(parts if isinstance(parts, list) else [parts]):
            if isinstance(part, str):
                if part.strip():
                    out.append(BlockRow("text", part))
            elif isinstance(part, dict):
                out.append(
                    BlockRow("image" if "image" in str(part.get("content_type")) else "other")
                )
            else:
                junk(junk_block(i, part))
    elif ctype == "code":
        out.append(
            BlockRow(
                "tool_call",
                "",
                tool_name=str(content.get("language") or "code"),
                tool_input=json_text({"code": content.get("text", "")}),
            )
        )
    elif ctype == "execution_output":
        out.append(BlockRow("tool_result", str(content.get("text", ""))))
    elif ctype == "thoughts":
        text = "\n".join(
            str(t.get("content", "")) for t in content.get("thoughts") or [] if isinstance(t, dict)
        )
        out.append(BlockRow("thinking", text))
    elif ctype == "reasoning_recap":
        out.append(BlockRow("thinking", str(content.get("content", ""))))
    elif ctype == "user_editable_context":
        text = "\n".join(
            str(content.get(k)) for k in ("user_profile", "user_instructions") if content.get(k)
        )
        out.append(BlockRow("text", text))
    else:
        text = content.get("text") or content.get("result") or ""
        out.append(BlockRow("other", text if isinstance(text, str) else json_text(text)))
    return out


@register_format(priority=20)
class ChatGPTReader:
    """Reader for ChatGPT's ``conversations.json`` (or one conversation object)."""

    name = "chatgpt"

    def sniff(self, path: Path, head: bytes) -> bool:
        """JSON with ``mapping`` and ``current_node``."""
        return path.suffix.lower() == ".json" and b'"mapping"' in head and b'"current_node"' in head

    def companion(self, path: Path) -> bool:
        """Other files of an export are not read."""
        return False

    def read(self, path: Path, builder: CorpusBuilder) -> int:
        """Read every conversation in the file."""
        data = load_json_file(path)  # LoadError naming the line, deep nesting included
        for i, conv in enumerate(data if isinstance(data, list) else [data]):
            if not isinstance(conv, dict) or not isinstance(conv.get("mapping"), dict):
                builder.skip(path, 1, f"conversation {i} has no mapping")
                continue
            try:
                self._conversation(path, conv, builder)
            except TOO_DEEP as exc:  # e.g. an id nested too deeply to turn into text
                builder.skip(path, 1, f"conversation {i}: {too_deep_reason(exc)}")
        return 1

    def _conversation(self, path: Path, conv: dict[str, Any], builder: CorpusBuilder) -> None:
        mapping: dict[str, Any] = conv["mapping"]
        cid = str(conv.get("conversation_id") or conv.get("id") or path.stem)
        builder.conversation(
            cid,
            source_format=self.name,
            source_path=path,
            title=conv.get("title") if isinstance(conv.get("title"), str) else None,
        )
        chain: list[dict[str, Any]] = []
        node_id = conv.get("current_node")
        seen: set[str] = set()
        while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
            seen.add(node_id)
            node = mapping[node_id]
            if not isinstance(node, dict):
                builder.skip(path, 1, f"{cid}: node {node_id} is not an object")
                break
            chain.append(node)
            node_id = node.get("parent")
        when_default = parse_time(conv.get("create_time"))
        for node in reversed(chain):
            try:
                self._message(path, cid, node, when_default, builder)
            except TOO_DEEP as exc:  # a value too deep to write back as a tool input
                builder.skip(path, 1, f"{cid}: {too_deep_reason(exc)}")

    def _message(
        self,
        path: Path,
        cid: str,
        node: dict[str, Any],
        when_default: datetime | None,
        builder: CorpusBuilder,
    ) -> None:
        msg = node.get("message")
        if not isinstance(msg, dict):
            builder.record()
            return
        author: dict[str, Any] = msg["author"] if isinstance(msg.get("author"), dict) else {}
        role = author.get("role")
        content = msg.get("content")
        if role not in ("user", "assistant", "system", "tool") or not isinstance(content, dict):
            builder.skip(path, 1, f"{cid}: message {msg.get('id')} has no role or content")
            return
        blocks = _parts(
            content, lambda why: builder.skip(path, 1, f"{cid}: message {msg.get('id')}: {why}")
        )
        meta: dict[str, Any] = msg["metadata"] if isinstance(msg.get("metadata"), dict) else {}
        hidden = bool(meta.get("is_visually_hidden_from_conversation"))
        if not blocks or all(not b.text and b.block_type == "text" for b in blocks):
            builder.record()
            return
        ctype = content.get("content_type")
        if role == "assistant" and msg.get("recipient") not in (None, "all"):
            blocks = [
                b
                if b.block_type != "text"
                else BlockRow(
                    "tool_call",
                    "",
                    tool_name=str(msg.get("recipient")),
                    tool_input=json_text({"input": b.text}),
                )
                for b in blocks
            ]
        if role == "tool":
            blocks = [
                BlockRow("tool_result", b.text) if b.block_type in ("text", "other") else b
                for b in blocks
            ]
        if hidden or ctype == "user_editable_context" or meta.get("is_user_system_message"):
            role = "system"
        real = role == "user" and any(b.block_type == "text" for b in blocks)
        builder.message(
            cid,
            role,
            blocks,
            source_path=path,
            source_line=1,
            timestamp=parse_time(msg.get("create_time")) or when_default,
            is_real_user=real,
            external_id=str(msg.get("id")) if msg.get("id") else None,
            speaker=author.get("name") if isinstance(author.get("name"), str) else None,
        )
