"""The project (the directory a session ran in) and sub-agent links of Codex and Amplifier."""

from __future__ import annotations

import json
from pathlib import Path

from convlab.loaders import load
from convlab.paths import sample_data_path


def test_codex_project_is_the_session_meta_cwd(transcripts: Path) -> None:
    # line 1 of session-01.jsonl: session_meta with "cwd":"/tmp/agent-history-real-agent/codex/..."
    c = load(transcripts / "codex" / "kvsankar_real_redacted" / "session-01.jsonl")
    assert c.conversations.select("conversation_id", "project").rows() == [
        ("019e9625-802f-7e91-840a-cfe88d14117a", "/tmp/agent-history-real-agent/codex/workspace")
    ]


def test_amplifier_project_and_agent_come_from_the_metadata(tmp_path: Path) -> None:
    faiss = sample_data_path() / "transcripts" / "amplifier"
    c = load(faiss)
    projects = dict(c.conversations.select("conversation_id", "project").iter_rows())
    assert projects["amp-faiss-choice"] == "/home/dev/amp-faiss-choice"  # its working_dir
    sub = tmp_path / "p" / "sessions" / "amp1-span_explorer"
    sub.mkdir(parents=True)
    line = {"role": "user", "content": "find the config loader"}
    (sub / "transcript.jsonl").write_text(json.dumps(line) + "\n")
    meta = {
        "session_id": "amp1-span_explorer",
        "parent_id": "amp1",
        "agent_name": "explorer",
        "working_dir": "/home/dev/app",
    }
    (sub / "metadata.json").write_text(json.dumps(meta))
    row = load(sub / "transcript.jsonl").conversations.row(0, named=True)
    assert (row["parent_conversation_id"], row["agent_id"], row["project"]) == (
        "amp1",
        "explorer",
        "/home/dev/app",
    )
