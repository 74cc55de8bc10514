"""Every reader on the real samples, with counts checked by hand against the raw files."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from convlab.loaders import FORMATS, detect, load
from convlab.paths import REPO_ROOT

FIXTURES = Path(__file__).parent.parent / "fixtures"


def roles(corpus) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return dict(corpus.messages.group_by("role").len().iter_rows())


def test_claude_code_short_session(transcripts: Path) -> None:
    # spotter short.jsonl by hand: 5 assistant lines share msg_01MKH1cc... -> 1 message;
    # 2 tool_result carrier lines -> 2 tool messages; 1 prompt "mix phx.server doesnt seem to
    # start"; "[Request interrupted by user for tool use]" + 2 local_command lines -> 3 system.
    c = load(transcripts / "claude_code" / "spotter_real" / "short.jsonl")
    assert roles(c) == {"user": 1, "assistant": 1, "tool": 2, "system": 3}
    assert c.messages["is_real_user"].sum() == 1
    assistant = c.messages.filter(pl.col("role") == "assistant")["message_index"].item()
    types = c.blocks.filter(pl.col("message_index") == assistant)["block_type"].to_list()
    assert types == ["thinking", "text", "tool_call", "tool_call"]  # "\n\n" text dropped
    assert c.conversations["conversation_id"].item() == "55604662-cf2a-4331-851a-ec234028f8ca"
    assert c.report.n_skipped == 0


def test_claude_code_subagents_and_titles(transcripts: Path) -> None:
    c = load(transcripts / "claude_code")
    subs = c.conversations.filter(pl.col("parent_conversation_id").is_not_null())
    # 2 subagents/ files under ae4a77f8, 1 under fa812bfe, ccrider's agent-session.jsonl
    assert subs.height == 4
    sub_msgs = c.messages.join(subs.select("conversation_id"), on="conversation_id")
    assert sub_msgs["is_sidechain"].all()
    titled = dict(c.conversations.select("conversation_id", "title").drop_nulls().iter_rows())
    assert titled["test-session-id"] == "Test session for JSONL parsing"


def test_claude_code_compaction_summary_is_system(transcripts: Path) -> None:
    c = load(
        transcripts
        / "claude_code"
        / "kvsankar_synthetic"
        / "compaction_claude_session_with_compaction.jsonl"
    )
    # 6 user lines: 3 real prompts, 3 tool_result carriers; 6 assistant lines, 6 ids
    assert roles(c) == {"user": 3, "tool": 3, "assistant": 6}


def test_codex_real_prompt_deduplicated(transcripts: Path) -> None:
    # session-01: developer context, <environment_context> user item, the prompt as a user item
    # AND as event_msg/user_message, one assistant item + a duplicating agent_message event.
    c = load(transcripts / "codex" / "kvsankar_real_redacted" / "session-01.jsonl")
    assert roles(c) == {"system": 2, "user": 1, "assistant": 1}
    assert c.blocks.filter(pl.col("message_index") == 2)["text"].item() == "[REDACTED_PROMPT]"


def test_codex_tool_calls_and_compaction(transcripts: Path) -> None:
    c = load(
        transcripts
        / "codex"
        / "kvsankar_synthetic"
        / "compaction_codex_session_with_compaction.jsonl"
    )
    # 4 user items, 6 assistant items + 2 reasoning + 2 function calls = 10 assistant messages,
    # 2 outputs, 1 compacted line
    assert roles(c) == {"user": 4, "assistant": 10, "tool": 2, "system": 1}
    assert c.blocks.filter(pl.col("block_type") == "tool_call").height == 2


def test_chatgpt_walks_the_active_branch(transcripts: Path) -> None:
    c = load(transcripts / "chatgpt")
    # current_node msg-6 -> msg-4 -> msg-3 -> msg-2 -> msg-1 (empty system, counted not emitted);
    # msg-5, a sibling edit of msg-4, is not on the branch.
    texts = c.blocks["text"].to_list()
    assert len(texts) == 4
    assert texts[2] == "How do I write a function in JavaScript?"
    assert not any("Python instead" in t for t in texts)
    assert c.messages["role"].to_list() == ["user", "assistant", "user", "assistant"]


def test_sharegpt_variants(transcripts: Path) -> None:
    c = load(transcripts / "sharegpt" / "sharegpt_fastchat" / "dummy_conversation.json")
    assert c.conversations.height == 500
    assert c.messages.filter(pl.col("message_index") == 0)["role"].unique().to_list() == ["user"]
    g = load(transcripts / "sharegpt" / "llamafactory" / "glaive_toolcall_en_demo.first25.json")
    assert g.conversations.height == 25
    assert g.blocks.filter(pl.col("block_type") == "tool_call").height > 0
    assert g.blocks.filter(pl.col("block_type") == "tool_result").height > 0
    r = load(transcripts / "sharegpt" / "llamafactory" / "reason_tool_use_demo.first15.jsonl")
    assert r.conversations.height == 15
    assert r.blocks.filter(pl.col("block_type") == "thinking").height > 0


def test_openai_fixture() -> None:
    c = load(FIXTURES / "openai" / "chat.jsonl")
    assert detect(FIXTURES / "openai" / "chat.jsonl") == "openai"
    assert c.conversations.height == 2
    first = c.messages.filter(pl.col("conversation_id") == "chat-0")
    assert first["role"].to_list() == ["system", "user", "assistant", "tool", "assistant"]
    call = c.blocks.filter(pl.col("block_type") == "tool_call")
    assert call["tool_name"].item() == "get_weather"
    assert call["tool_input"].item() == '{"city":"Paris"}'
    assert c.blocks.filter(pl.col("block_type") == "image").height == 1


def test_anthropic_fixture() -> None:
    path = FIXTURES / "anthropic" / "conversation.json"
    assert detect(path) == "anthropic"
    c = load(path)
    assert c.messages["role"].to_list() == ["system", "user", "assistant", "tool", "assistant"]
    assert c.messages["is_real_user"].to_list() == [False, True, False, False, False]
    assert c.blocks.filter(pl.col("message_index") == 2)["block_type"].to_list() == [
        "thinking",
        "text",
        "tool_call",
    ]


def test_amplifier_sample_sessions() -> None:
    root = REPO_ROOT / "data" / "sample" / "transcripts" / "amplifier"
    c = load(root, strict=True)
    assert c.conversations.height == 7
    assert set(c.report.files["source_format"]) == {"amplifier"}  # metadata.json: companions
    bash = c.filter_conversations(["amp-bash-traps"])
    # 3 prompts, 1 hook injection, 3 assistant replies, 1 tool result
    assert roles(bash) == {"user": 3, "system": 1, "assistant": 3, "tool": 1}
    # thinking appears once per reply although thinking_block duplicates it
    assert bash.blocks.filter(pl.col("block_type") == "thinking").height == 3
    assert bash.conversations["title"].item() == "Bash scripts with set -euo pipefail"


def test_every_format_is_registered() -> None:
    assert set(FORMATS) == {
        "amplifier",
        "chatgpt",
        "claude_code",
        "codex",
        "locomo",
        "longmemeval",
        "anthropic",
        "openai",
        "sharegpt",
    }
    with pytest.raises(ValueError, match="unknown format 'nope'; valid: amplifier, anthropic"):
        load(FIXTURES / "openai" / "chat.jsonl", format="nope")


def test_detection_tries_the_shipped_formats_by_priority() -> None:
    # each reader's registered priority; the registry's names() are sorted, detection is not:
    # anthropic is tried after longmemeval although it sorts before it
    assert [name for name, _ in FORMATS.in_order()] == [
        "amplifier",
        "chatgpt",
        "claude_code",
        "codex",
        "locomo",
        "longmemeval",
        "anthropic",
        "openai",
        "sharegpt",
    ]
    assert FORMATS.names()[:2] == ("amplifier", "anthropic")
