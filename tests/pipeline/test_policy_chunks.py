"""Content policy and chunks: what text is kept, how it is split, exact token counts."""

from __future__ import annotations

import json

import polars as pl
import pytest

from convlab.loaders.blocks import BlockRow
from convlab.pipeline.chunks import chunks, split_text
from convlab.pipeline.policy import ContentPolicy, policy_summary, policy_text, render_tool_call
from convlab.pipeline.tokens import count_tokens, split_at_tokens
from tests.helpers import corpus


def test_tool_call_values_cut_to_250() -> None:
    text = render_tool_call("Write", json.dumps({"file_path": "a.py", "content": "x" * 300}))
    assert text == "Write file_path:a.py content:" + "x" * 250 + "..."
    assert render_tool_call("Bash", '{"cmd": ["ls", "-l"]}') == 'Bash cmd:["ls", "-l"]'


def _agent_corpus():  # type: ignore[no-untyped-def]
    return corpus(
        {
            "c": [
                ("user", "Run the tests. Then report."),
                (
                    "assistant",
                    [
                        BlockRow("thinking", "I should run pytest."),
                        BlockRow("text", "Running."),
                        BlockRow(
                            "tool_call", "", tool_name="Bash", tool_input='{"command": "pytest -q"}'
                        ),
                    ],
                ),
                ("tool", [BlockRow("tool_result", "3 passed " * 400)]),
                ("assistant", "All green."),
            ]
        }
    )


def test_default_policy_keeps_text_and_calls_only() -> None:
    pt = policy_text(_agent_corpus(), ContentPolicy())
    assert pt["text"].to_list() == [
        "Run the tests. Then report.",
        "Running.",
        "Bash command:pytest -q",
        "All green.",
    ]
    assert pt["role"].to_list() == ["user", "assistant", "assistant", "assistant"]


def test_thinking_and_capped_tool_results_when_on() -> None:
    p = ContentPolicy(thinking=True, tool_results=True, tool_result_max_chars=20)
    pt = policy_text(_agent_corpus(), p)
    assert "I should run pytest." in pt["text"].to_list()
    tool = pt.filter(pl.col("role") == "tool")["text"].item()
    assert tool == ("3 passed " * 400)[:20]
    summary = policy_summary(_agent_corpus(), ContentPolicy())
    dropped = summary.filter(~pl.col("kept"))["block_type"].to_list()
    assert sorted(dropped) == ["thinking", "tool_result"]


def test_policy_validation() -> None:
    with pytest.raises(ValueError, match="tool_call_value_chars"):
        ContentPolicy(tool_call_value_chars=0)


def test_sentence_ids_and_s0_per_role() -> None:
    s = chunks(_agent_corpus())
    assert s["chunk_id"].to_list() == [
        "c:t0:user:s0",
        "c:t0:user:s1",
        "c:t0:assistant:s0",
        "c:t0:assistant:s1",
        "c:t0:assistant:s2",
    ]
    assert s["text"].to_list() == [
        "Run the tests.",
        "Then report.",
        "Running.",
        "Bash command:pytest -q",
        "All green.",
    ]
    assert s["sentence_in_message"].to_list() == [0, 1, 0, 1, 0]
    assert s["position"].to_list() == [0, 1, 2, 3, 4]
    assert s["n_tokens"].to_list() == count_tokens(s["text"].to_list())
    assert chunks(_agent_corpus()).equals(s)  # stable across runs


def test_code_blocks_and_dialog_speaker_labels() -> None:
    text = "Use this:\n```python\nimport os\nprint(os.getcwd())\n```\nDone. Really."
    assert split_text(text) == [
        ("Use this:", False),
        ("```python", True),
        ("import os", True),
        ("print(os.getcwd())", True),
        ("```", True),
        ("Done.", False),
        ("Really.", False),
    ]
    c = corpus({"c": [("user", text), ("assistant", "ok")]})
    s = chunks(c)
    assert s["text"].to_list()[1] == "```python\nimport os\nprint(os.getcwd())\n```"
    d = corpus(
        {"d": [("user", "Hi there. Bye.", True, "Ann"), ("assistant", "Yo.", False, "Bo")]},
        kind="dialog",
    )
    assert chunks(d)["text"].to_list() == ["Ann: Hi there.", "Bye.", "Bo: Yo."]


def test_long_sentence_split_at_word_boundaries() -> None:
    words = " ".join(f"token{i}" for i in range(600))
    c = corpus({"c": [("user", words), ("assistant", "ok")]})
    s = chunks(c).filter(pl.col("role") == "user")
    assert s.height > 1
    assert max(s["n_tokens"]) <= 254
    assert " ".join(s["text"]).split() == words.split()
    assert s["n_tokens"].to_list() == count_tokens(s["text"].to_list())


def test_space_joined_token_counts_are_additive() -> None:
    parts = [
        "How does the KV cache work?",
        "The KV-cache stores key/value pairs (past tokens).",
        "Scores are capped at 10,000 to prevent runaway!",
        "naïve café déjà-vu 😀 x²",
        "`pytest -q --maxfail=1`",
    ]
    counts = count_tokens(parts)
    for i in range(len(parts)):
        for j in range(len(parts)):
            joined = parts[i] + " " + parts[j]
            assert count_tokens([joined])[0] == counts[i] + counts[j]


def test_split_at_tokens_small() -> None:
    assert split_at_tokens("a b c d e", 2) == ["a b", "c d", "e"]
    with pytest.raises(ValueError, match="at least 1"):
        split_at_tokens("a", 0)


def test_sentence_breaker_matches_blingfires_own_wrapper() -> None:
    import blingfire

    from convlab.pipeline.chunks import _break_sentences

    texts = [
        "Hello there. How are you?",
        "Ünïcode — déjà vu. Next one!",
        "Dr. Smith went to Washington. He said hi.",
        "日本語の文。次の文。",
        "😀 emoji first. Then words",
        "x" * 70_000 + ". A long line grows the buffer.",
    ]
    for t in texts:
        assert _break_sentences(t) == blingfire.text_to_sentences(t)
