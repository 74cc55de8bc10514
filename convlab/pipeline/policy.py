"""The content policy: what text each block contributes to what is embedded (seeds/000, 002).

Defaults follow seeds/000: user text and assistant text on; tool calls on, rendered as
``name key:value key:value`` with each value cut to 250 characters; thinking and tool results
off (when turned on, each block is capped). System messages (system prompts, injected context,
compaction summaries) are off by default: they are not what a person said. An analyst changes the
policy and compares strategies under it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl

from convlab.loaders.corpus import Corpus

__all__ = ["ContentPolicy", "policy_summary", "policy_text", "render_tool_call"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentPolicy:
    """What text each block contributes.

    Attributes:
        user_text: text blocks of user messages.
        assistant_text: text blocks of assistant messages.
        tool_calls: tool calls as ``name key:value ...``.
        tool_call_value_chars: each tool-call value is cut to this many characters.
        thinking: thinking blocks (assistant reasoning).
        thinking_max_chars: cap on a thinking block when on.
        tool_results: tool outputs (role ``tool`` chunks).
        tool_result_max_chars: cap on a tool output when on.
        system: system messages (system prompts, injected context, summaries).
        speaker_labels: in dialogs, start each message with ``"{speaker}: "``.
    """

    user_text: bool = True
    assistant_text: bool = True
    tool_calls: bool = True
    tool_call_value_chars: int = 250
    thinking: bool = False
    thinking_max_chars: int = 2000
    tool_results: bool = False
    tool_result_max_chars: int = 2000
    system: bool = False
    speaker_labels: bool = True

    def __post_init__(self) -> None:
        for name in ("tool_call_value_chars", "thinking_max_chars", "tool_result_max_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")

    def as_dict(self) -> dict[str, Any]:
        """The policy as a plain dict (saved in manifests and run configs)."""
        return asdict(self)


def render_tool_call(name: str | None, tool_input: str | None, value_chars: int = 250) -> str:
    """``name key:value key:value``, each value cut to ``value_chars`` characters (seeds/000).

    Example:
        >>> render_tool_call("Bash", '{"command": "ls -la", "timeout": 5}')
        'Bash command:ls -la timeout:5'
    """
    parts = [name or "tool"]
    try:
        data = json.loads(tool_input) if tool_input else {}
    except ValueError:
        data = tool_input
    if isinstance(data, dict):
        for key, value in data.items():
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            parts.append(f"{key}:{_cut(text, value_chars)}")
    elif data not in (None, ""):
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        parts.append(_cut(text, value_chars))
    return " ".join(parts)


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n] + "..."


def policy_text(corpus: Corpus, policy: ContentPolicy) -> pl.DataFrame:
    """One row per kept block: ``conversation_id, message_index, block_index, role, text``.

    ``role`` is the chunk role: ``tool`` for tool results, else the message's role. Dialog
    speaker labels are prefixed to the first kept block of each message.
    """
    m = corpus.messages.select("conversation_id", "message_index", "role", "speaker")
    b = corpus.blocks.join(m, on=["conversation_id", "message_index"], how="inner")
    kind = corpus.conversations.select("conversation_id", "kind")
    b = b.join(kind, on="conversation_id", how="left")
    role, bt = pl.col("role"), pl.col("block_type")
    keep = (
        ((bt == "text") & (role == "user") & pl.lit(policy.user_text))
        | ((bt == "text") & (role == "assistant") & pl.lit(policy.assistant_text))
        | ((bt == "text") & (role == "system") & pl.lit(policy.system))
        | ((bt == "text") & (role == "tool") & pl.lit(policy.tool_results))
        | ((bt == "tool_call") & pl.lit(policy.tool_calls))
        | ((bt == "thinking") & pl.lit(policy.thinking))
        | ((bt == "tool_result") & pl.lit(policy.tool_results))
    )
    b = b.filter(keep)
    calls = b.filter(bt == "tool_call")
    rendered = [
        render_tool_call(n, i, policy.tool_call_value_chars)
        for n, i in zip(calls["tool_name"], calls["tool_input"], strict=True)
    ]
    calls = calls.with_columns(pl.Series("text", rendered, dtype=pl.String))
    b = pl.concat([b.filter(bt != "tool_call"), calls]).sort(
        "conversation_id", "message_index", "block_index"
    )
    b = b.with_columns(
        pl.when(bt == "thinking")
        .then(pl.col("text").str.slice(0, policy.thinking_max_chars))
        .when(bt == "tool_result")
        .then(pl.col("text").str.slice(0, policy.tool_result_max_chars))
        .otherwise(pl.col("text"))
        .alias("text"),
        pl.when(bt == "tool_result").then(pl.lit("tool")).otherwise(role).alias("role"),
    ).filter(pl.col("text").str.strip_chars() != "")
    if policy.speaker_labels:
        first = pl.col("block_index") == pl.col("block_index").min().over(
            "conversation_id", "message_index"
        )
        label = (pl.col("kind") == "dialog") & pl.col("speaker").is_not_null() & first
        b = b.with_columns(
            pl.when(label)
            .then(pl.concat_str([pl.col("speaker"), pl.lit(": "), pl.col("text")]))
            .otherwise(pl.col("text"))
            .alias("text")
        )
    return b.select("conversation_id", "message_index", "block_index", "role", "text")


def policy_summary(corpus: Corpus, policy: ContentPolicy) -> pl.DataFrame:
    """What the policy keeps and drops: blocks and characters by role and block type."""
    m = corpus.messages.select("conversation_id", "message_index", "role")
    b = corpus.blocks.join(m, on=["conversation_id", "message_index"], how="inner")
    kept = policy_text(corpus, policy).select(
        "conversation_id", "message_index", "block_index", pl.lit(True).alias("kept")
    )
    b = b.join(kept, on=["conversation_id", "message_index", "block_index"], how="left")
    return (
        b.with_columns(pl.col("kept").fill_null(False))
        .group_by("role", "block_type", "kept")
        .agg(pl.len().alias("blocks"), pl.col("text").str.len_chars().sum().alias("chars"))
        .sort("role", "block_type", "kept")
    )
