"""A store written before the conversations' ``agent_id`` and ``project`` columns still updates."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK
from convlab.store import Store
from convlab.store.manifest import FRAMES
from tests.helpers import index_argv

HISTORY = Path(__file__).parent.parent / "fixtures" / "claude_code" / "-home-ann-src-api"


def test_an_update_keeps_old_rows_and_adds_the_columns(tmp_path: Path) -> None:
    hist, out = tmp_path / "h", tmp_path / "store"
    shutil.copytree(HISTORY, hist)
    index = index_argv(hist, out)
    assert main(index) == EXIT_OK
    # the same version as a store of the previous release wrote it: no agent_id, no project
    old = Store(out)
    frames = {name: old.frame(name) for name in FRAMES}
    frames["conversations"] = frames["conversations"].drop("agent_id", "project")
    old.write_version(old.manifest(), frames, old.index(), old.bm25())
    # one session file changes: its conversation is rebuilt, the others' rows are kept
    agent = hist / "agent-ffdd9610.jsonl"
    agent.write_text(agent.read_text().replace("nightly export job", "weekly export job"))
    assert main(index) == EXIT_OK
    convs = Store(out).frame("conversations")
    projects = dict(convs.select("conversation_id", "project").iter_rows())
    sid = "7e3f9a10-1c2d-4e5f-8a9b-0c1d2e3f4a02"
    assert projects[f"{sid}:agent-ffdd9610"] == "/home/ann/src/api"  # re-read
    assert projects[sid] is None  # kept from the old version, which had no project
    assert convs.height == 4
    assert convs.schema["project"] == pl.String
