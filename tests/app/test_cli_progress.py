"""`convlab index` shows one progress display for the whole run, and nothing under -q."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK
from convlab.paths import sample_data_path
from convlab.progress import BarProgress
from tests.test_progress import states

SAMPLE = sample_data_path() / "transcripts"
TEXTS = 324  # the distinct texts of the default system's dense views (sequential, turn_pair) of the
# sample: the index summary's "texts: 324 embedded", one bar across every cache segment


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cache segments of 50 texts: the sample's texts fill four."""
    monkeypatch.setattr("convlab.embed.cache.SEGMENT_TEXTS", 50)


@pytest.mark.usefixtures("small_segments")
def test_one_bar_with_phases_covers_all_texts_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    # every update drawn (the CLI's bar redraws at most every 0.2 s)
    monkeypatch.setattr(BarProgress.__init__, "__kwdefaults__", {"mininterval": 0})
    argv = ["index", str(SAMPLE), "--store", str(tmp_path / "s"), "--embedder", "hash"]
    assert main(argv) == EXIT_OK
    cap = capsys.readouterr()
    assert f"texts: {TEXTS} embedded" in cap.out
    drawn = cap.err
    got = states(drawn)
    # the embed phase: one bar of every text, never a segment's own count
    embed = [(done, total) for name, done, total in got if name == "embed"]
    assert {total for _, total in embed} == {TEXTS}
    assert [d for d, _ in embed] == sorted(d for d, _ in embed)
    assert {0, 50, 100, 150, TEXTS} <= {d for d, _ in embed}  # moved at every segment
    # phases in order, each drawn on the same bar
    order = [name for name in ("load", "chunk", "embed", "index") if f"\r{name}" in drawn]
    assert order == ["load", "chunk", "embed", "index"]
    assert drawn.index("\rchunk") < drawn.index("\rembed") < drawn.index("\rindex")
    assert "Batches" not in drawn


@pytest.mark.usefixtures("small_segments")
def test_a_log_gets_a_line_per_sized_phase(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["index", str(SAMPLE), "--store", str(tmp_path / "s"), "--embedder", "hash"]
    assert main(argv) == EXIT_OK
    err = capsys.readouterr().err.splitlines()
    assert f"convlab index: embed: {TEXTS}" in err
    assert not any("\r" in line for line in err)


@pytest.mark.usefixtures("small_segments")
def test_quiet_prints_nothing_even_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    argv = ["index", str(SAMPLE), "--store", str(tmp_path / "s"), "--embedder", "hash", "-q"]
    assert main(argv) == EXIT_OK
    assert capsys.readouterr().err == ""
