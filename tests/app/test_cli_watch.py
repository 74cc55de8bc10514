"""`convlab index --watch`: poll the sources, index again when a transcript changes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK, EXIT_USAGE
from convlab.store import Store
from tests.helpers import locomo_file


def _dialog(path: Path, sample_id: str) -> Path:
    locomo_file(path, [("Ann", "Hello there."), ("Bo", "Hi, how are you?")])
    path.write_text(path.read_text().replace('"d1"', f'"{sample_id}"'))
    return path


def test_watch_indexes_again_when_a_file_appears_and_not_otherwise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "history"
    src.mkdir()
    _dialog(src / "a.json", "a")
    polls: list[float] = []

    def step(seconds: float) -> None:  # the wait between polls: a new transcript after the 2nd
        polls.append(seconds)
        if len(polls) == 2:
            _dialog(src / "b.json", "b")

    monkeypatch.setattr("convlab.app.cli.index._sleep", step)
    store = tmp_path / "s"
    argv = ["index", str(src), "--store", str(store), "--embedder", "hash", "-q"]
    assert main([*argv, "--watch", "--interval", "5", "--watch-cycles", "4"]) == EXIT_OK
    out = capsys.readouterr().out
    assert polls == [5.0] * 4
    # the first index's summary, then one line for the sync after poll 2 (polls 1, 3 and 4
    # saw nothing new)
    assert out.count("store: ") == 1
    assert "conversations: 1 added, 0 changed, 0 detached, 0 removed" in out
    synced = [line for line in out.splitlines() if " synced: " in line]
    assert len(synced) == 1
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d synced: 1 file read, 1 conversation changed, "
        r"\d+ texts? embedded, \d+ from cache, \d+\.\d s",
        synced[0],
    )
    assert sorted(Store(store).frame("conversations")["conversation_id"]) == ["a", "b"]


def test_a_changed_file_is_indexed_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _dialog(tmp_path / "a.json", "a")
    monkeypatch.setattr(
        "convlab.app.cli.index._sleep",
        lambda _: src.write_text(src.read_text().replace("Hello there.", "Hello there, again.")),
    )
    argv = ["index", str(src), "--store", str(tmp_path / "s"), "--embedder", "hash", "-q"]
    assert main([*argv, "--watch", "--watch-cycles", "1"]) == EXIT_OK
    out = capsys.readouterr().out
    assert " synced: 1 file read, 1 conversation changed, " in out
    texts = Store(tmp_path / "s").frame("chunks")["text"].to_list()
    assert any("Hello there, again." in t for t in texts)


def test_watch_cycles_without_watch_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _dialog(tmp_path / "a.json", "a")
    argv = ["index", str(src), "--store", str(tmp_path / "s"), "--embedder", "hash"]
    assert main([*argv, "--watch-cycles", "1"]) == EXIT_USAGE
    assert "--watch-cycles is a bound for --watch" in capsys.readouterr().err
