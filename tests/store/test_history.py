"""History outlives its files: rotated, truncated, replaced and rewritten transcripts.

On the code before (format 3), rotating a transcript (``mv x.jsonl x.jsonl.1``), truncating it,
or replacing it with a symlink, a FIFO or a device removed its conversation from the store; a
truncation in the middle of a line dropped the later turns; under ``--watch`` the store went
from 12 to 8 conversations. Here every stored turn stays, the conversation marked detached, and
``convlab prune`` is the one way out.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK, EXIT_USAGE
from convlab.embed import HashEmbedder
from convlab.store import Store, StoreConfig, StoreMismatch

CONFIG = StoreConfig(system="turn_pair")


def _session(path: Path, sid: str, n: int, *, word: str = "question") -> Path:
    """A Claude Code session of ``n`` turns (a user line and an assistant line each)."""
    lines, parent = [], None
    for i in range(n):
        user = {
            "type": "user",
            "uuid": f"{sid}-u{i}",
            "parentUuid": parent,
            "sessionId": sid,
            "timestamp": f"2026-01-01T10:{i:02d}:00Z",
            "message": {"role": "user", "content": f"{word} {i} about topic{i} in {sid}"},
        }
        reply = {
            "type": "assistant",
            "uuid": f"{sid}-a{i}",
            "parentUuid": user["uuid"],
            "sessionId": sid,
            "timestamp": f"2026-01-01T10:{i:02d}:30Z",
            "message": {
                "id": f"m-{sid}-{i}",
                "role": "assistant",
                "content": [{"type": "text", "text": f"answer {i} on topic{i} for {sid}"}],
            },
        }
        parent = reply["uuid"]
        lines += [json.dumps(user), json.dumps(reply)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def src(tmp_path: Path) -> Path:
    """Two sessions: ``sa`` (4 turns) in a.jsonl, ``sb`` (3 turns) in b.jsonl."""
    root = tmp_path / "src"
    root.mkdir()
    _session(root / "a.jsonl", "sa", 4)
    _session(root / "b.jsonl", "sb", 3)
    return root


def _turns(store: Store) -> dict[str, int]:
    return dict(store.frame("turns").group_by("conversation_id").len().iter_rows())


def _texts(store: Store, conversation: str) -> list[str]:
    chunks = store.frame("chunks").filter(pl.col("conversation_id") == conversation)
    return chunks.sort("position")["text"].to_list()


def _update(store: Store, src: Path) -> None:
    store.update([src], config=CONFIG, embedder=HashEmbedder())


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _device(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/null")


def _elsewhere(path: Path) -> None:
    other = path.parent.parent / "elsewhere.jsonl"
    _session(other, "sz", 1)
    path.unlink()
    path.symlink_to(other)


def _cut(path: Path) -> None:
    """Truncate in the middle of a line past the first turn."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2 + 7])


def _emptied(path: Path) -> None:
    path.write_bytes(b"")


def _deleted(path: Path) -> None:
    path.unlink()


@pytest.mark.parametrize(
    "replace", [_deleted, _emptied, _fifo, _device, _elsewhere], ids=lambda f: f.__name__
)
def test_a_transcript_gone_or_replaced_keeps_its_conversation(
    replace: Callable[[Path], None], src: Path, tmp_path: Path
) -> None:
    store = Store(tmp_path / "store")
    _update(store, src)
    before = _texts(store, "sa")
    source = str((src / "a.jsonl").resolve())
    replace(src / "a.jsonl")
    _update(store, src)
    assert _turns(store)["sa"] == 4
    assert _texts(store, "sa") == before
    detached = store.manifest().detached
    assert list(detached) == ["sa"]
    assert detached["sa"].reason == "gone"
    assert detached["sa"].source == source
    assert main(["stats", "--store", str(store.directory), "--verify"]) == EXIT_OK


def test_rotation_keeps_the_conversation_attached_to_its_new_name(
    src: Path, tmp_path: Path
) -> None:
    store = Store(tmp_path / "store")
    _update(store, src)
    before = _texts(store, "sa")
    (src / "a.jsonl").rename(src / "a.jsonl.1")  # log rotation
    _update(store, src)
    assert _texts(store, "sa") == before
    assert _turns(store) == {"sa": 4, "sb": 3}
    # read again from a.jsonl.1, the same messages: attached; or not a transcript: detached
    detached = store.manifest().detached
    assert detached == {} or detached["sa"].reason == "gone"


def test_a_truncation_in_the_middle_of_a_line_keeps_every_turn(src: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    _update(store, src)
    before = _texts(store, "sa")
    _cut(src / "a.jsonl")  # inside the 5th line
    _update(store, src)
    assert _texts(store, "sa") == before
    assert _turns(store)["sa"] == 4
    assert store.manifest().detached["sa"].reason == "shrank"
    # the file grows back past what was stored: attached again, the new turn added
    _session(src / "a.jsonl", "sa", 5)
    _update(store, src)
    assert _turns(store)["sa"] == 5
    assert _texts(store, "sa")[: len(before)] == before
    assert store.manifest().detached == {}


def test_a_file_that_grew_keeps_its_old_turns(src: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    _update(store, src)
    before = _texts(store, "sb")
    _session(src / "b.jsonl", "sb", 5)
    _update(store, src)
    assert _turns(store) == {"sa": 4, "sb": 5}
    assert _texts(store, "sb")[: len(before)] == before
    assert store.manifest().detached == {}


def test_a_rewritten_file_adds_a_version_and_drops_no_turn(src: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    _update(store, src)
    before = _texts(store, "sb")
    _session(src / "b.jsonl", "sb", 2, word="QUESTION")  # other text, fewer turns
    _update(store, src)
    assert _turns(store) == {"sa": 4, "sb": 2, "sb~1": 3}
    assert _texts(store, "sb~1") == before  # the earlier version, whole
    assert _texts(store, "sb")[0] == "QUESTION 0 about topic0 in sb"
    detached = store.manifest().detached
    assert (detached["sb~1"].reason, detached["sb~1"].of) == ("rewritten", "sb")
    # every id of the earlier version was renamed with it: searchable, shown, whole
    units = store.frame("units").filter(pl.col("conversation_id") == "sb~1")
    assert units.height == 6
    assert all(u.startswith("turn_pair:sb~1:t") for u in units["unit_id"])
    assert all(d.startswith("sb~1:t") for ds in units["doc_ids"] for d in ds)
    hits = store.search("topic2 in sb", k=10)
    assert "sb~1" in hits["conversation_id"].to_list()
    # rewritten again: a second version, the first kept
    _session(src / "b.jsonl", "sb", 1, word="ASK")
    _update(store, src)
    assert _turns(store) == {"sa": 4, "sb": 1, "sb~1": 3, "sb~2": 2}
    assert main(["stats", "--store", str(store.directory), "--verify"]) == EXIT_OK


def test_stats_counts_and_prune_removes_what_is_asked(
    src: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store(tmp_path / "store")
    _update(store, src)
    (src / "a.jsonl").unlink()
    _session(src / "b.jsonl", "sb", 2, word="QUESTION")
    _update(store, src)
    where = ["--store", str(store.directory)]
    capsys.readouterr()
    assert main(["stats", *where]) == EXIT_OK
    out = capsys.readouterr().out
    assert "detached: 2 conversations kept after their transcripts changed or went " in out
    assert "(gone 1, rewritten 1)" in out
    assert main(["stats", *where, "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["detached"] == {"gone": 1, "rewritten": 1}

    assert main(["prune", *where, "--reason", "rewritten", "--dry-run"]) == EXIT_OK
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("would remove sb~1 (")
    assert _turns(Store(store.directory))["sb~1"] == 3  # a dry run removes nothing

    assert main(["prune", *where, "--reason", "rewritten"]) == EXIT_OK
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("removed sb~1 (")
    assert "detached: rewritten" in out[0]
    assert out[-1] == "removed 1 conversations; the store holds 2 conversations, 6 turns"
    after = Store(store.directory)
    assert _turns(after) == {"sa": 4, "sb": 2}
    assert list(after.manifest().detached) == ["sa"]

    assert main(["prune", *where, "--conversation", "sb"]) == EXIT_OK  # an attached one
    assert "removed sb (" in capsys.readouterr().out
    assert main(["prune", *where, "--detached"]) == EXIT_OK
    assert "removed sa (" in capsys.readouterr().out
    empty = Store(store.directory)
    assert empty.manifest().counts["conversations"] == 0
    assert main(["stats", *where, "--verify"]) == EXIT_OK
    assert main(["prune", *where]) == EXIT_USAGE  # nothing named: nothing removed


def test_rebuild_refuses_to_lose_detached_history(src: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    _update(store, src)
    (src / "a.jsonl").unlink()
    _update(store, src)
    with pytest.raises(StoreMismatch, match="holds 1 detached conversations"):
        store.update([src], config=CONFIG, embedder=HashEmbedder(), rebuild=True)
    assert _turns(store)["sa"] == 4


# -- under --watch: the polls are stepped through, never timed ---------------------------------


def _watch(src: Path, store: Path, steps: list[Callable[[], None]], monkeypatch) -> int:  # type: ignore[no-untyped-def]
    """``convlab index SRC --watch`` for one poll per step, each step run before its poll."""
    pending = list(steps)
    monkeypatch.setattr("convlab.app.cli.index._sleep", lambda _: pending.pop(0)())
    argv = ["index", str(src), "--store", str(store), "--embedder", "hash", "--system", "turn_pair"]
    return main([*argv, "--watch", "--watch-cycles", str(len(steps))])


def test_watch_keeps_history_through_rotate_truncate_symlink_and_fifo(
    src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for sid in ("sc", "sd"):
        _session(src / f"{sid}.jsonl", sid, 2)
    store = tmp_path / "store"
    steps = [
        lambda: (src / "a.jsonl").rename(src / "a.jsonl.1"),
        lambda: _cut(src / "b.jsonl"),
        lambda: _elsewhere(src / "sc.jsonl"),
        lambda: _fifo(src / "sd.jsonl"),
    ]
    assert _watch(src, store, steps, monkeypatch) == EXIT_OK
    s = Store(store)
    turns = _turns(s)
    assert {c: turns[c] for c in ("sa", "sb", "sc", "sd")} == {"sa": 4, "sb": 3, "sc": 2, "sd": 2}
    detached = s.manifest().detached
    assert {c: d.reason for c, d in detached.items() if c != "sa"} == {
        "sb": "shrank",
        "sc": "gone",
        "sd": "gone",
    }


def test_watch_survives_its_folder_deleted_and_made_again(
    src: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = tmp_path / "store"
    saved = tmp_path / "saved"
    shutil.copytree(src, saved)

    def recreate() -> None:
        src.mkdir()
        _session(src / "c.jsonl", "sc", 2)

    steps = [
        lambda: shutil.rmtree(src),
        lambda: None,  # still gone: nothing to do
        recreate,  # made again, holding a new session only
        lambda: shutil.copy(saved / "a.jsonl", src / "a.jsonl"),  # an old one comes back
    ]
    assert _watch(src, store, steps, monkeypatch) == EXIT_OK
    err = capsys.readouterr().err
    assert f"convlab index: {src} is gone; its conversations stay in the store, detached" in err
    s = Store(store)
    assert _turns(s) == {"sa": 4, "sb": 3, "sc": 2}
    assert {c: d.reason for c, d in s.manifest().detached.items()} == {"sb": "gone"}
