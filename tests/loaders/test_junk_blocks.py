"""Junk content blocks (a number, null, an array in a content list): a counted skip, never dropped.

Lenient mode keeps the message and its valid blocks and records one skip row per junk block,
naming file, line and the block; strict mode raises a LoadError naming file and line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convlab.loaders import LoadError, load

CHATGPT = {
    "title": "t",
    "current_node": "n2",
    "mapping": {
        "n1": {"message": None, "parent": None},
        "n2": {
            "parent": "n1",
            "message": {
                "id": "m2",
                "author": {"role": "user"},
                "content": {"content_type": "text", "parts": ["kept text", 7]},
            },
        },
    },
}
CLAUDE = [
    {"type": "user", "sessionId": "s1", "uuid": "u1", "message": {"content": "Fix the build"}},
    {
        "type": "assistant",
        "sessionId": "s1",
        "uuid": "a1",
        "message": {"id": "m1", "content": [{"type": "text", "text": "kept text"}, 7]},
    },
]
CODEX = [
    {"type": "session_meta", "timestamp": "2026-01-01T10:00:00Z", "payload": {"id": "c1"}},
    {
        "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": [{"text": "kept text"}, 7]},
    },
]

# format -> (file name, content, line of the junk, what holds it, the junk's description)
CASES: dict[str, tuple[str, str, int, str, str]] = {
    "claude_code": (
        "s1.jsonl",
        "\n".join(map(json.dumps, CLAUDE)) + "\n",
        2,
        "assistant message",
        "content block 1 is a number",
    ),
    "codex": (
        "rollout-1.jsonl",
        "\n".join(map(json.dumps, CODEX)) + "\n",
        2,
        "message",
        "content block 1 is a number",
    ),
    "amplifier": (
        "sessions/amp1/transcript.jsonl",
        json.dumps({"role": "user", "content": ["kept text", None]}) + "\n",
        1,
        "",
        "content block 1 is null",
    ),
    "openai": (
        "train.jsonl",
        json.dumps({"messages": [{"role": "user", "content": [[1], "kept text"]}]}) + "\n",
        1,
        "message 0",
        "content block 0 is an array",
    ),
    "anthropic": (
        "claude.json",
        json.dumps(
            {
                "system": "careful",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "kept text"}, True]}
                ],
            }
        ),
        1,
        "message 0",
        "content block 1 is a boolean",
    ),
    "sharegpt": (
        "share.json",
        json.dumps(
            [
                {
                    "id": "g1",
                    "conversations": [
                        {"from": "human", "value": [{"type": "text", "value": "kept text"}, 7]},
                        {"from": "gpt", "value": "Sunny."},
                    ],
                }
            ]
        ),
        1,
        "turn 0",
        "content block 1 is a number",
    ),
    "chatgpt": ("conversations.json", json.dumps([CHATGPT]), 1, "c", "content block 1 is a number"),
}


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_a_junk_block_is_a_counted_skip_and_a_load_error_when_strict(
    fmt: str, tmp_path: Path
) -> None:
    name, text, line, holder, junk = CASES[fmt]
    f = tmp_path / name
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)
    corpus = load(f, format=fmt)
    assert "kept text" in corpus.blocks["text"].to_list()  # the message and its text are kept
    rows = corpus.report.skipped.rows()
    assert len(rows) == 1, rows
    path, at, reason = rows[0]
    assert (path, at) == (str(f), line)
    assert reason.endswith(f"{junk}, not a string or an object")
    assert holder in reason
    with pytest.raises(LoadError, match=rf"{f.name}:{line}: .*{junk}"):
        load(f, format=fmt, strict=True)
