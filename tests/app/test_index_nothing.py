"""``convlab index`` on paths holding no readable transcript: exit 2, one line saying why."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK, EXIT_USAGE
from convlab.paths import sample_data_path


def _index(path: Path, store: Path) -> list[str]:
    return ["index", str(path), "--store", str(store), "--embedder", "hash", "-q"]


def test_a_folder_with_nothing_readable_is_refused_with_the_counts_of_skips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junk = tmp_path / "junk"
    junk.mkdir()
    os.mkfifo(junk / "a.jsonl")
    (junk / "b.jsonl").write_text("not json\n")
    (junk / "c.json").write_text('{"x": 1}\n')
    assert main(_index(junk, tmp_path / "store")) == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"convlab index: no readable transcript found under {junk}: 2 x unrecognised format; "
        "1 x a FIFO (named pipe), not a regular file (--verbose lists each skipped file)"
    ]
    # again, with the junk files unchanged since: still refused, still saying why
    assert main(_index(junk, tmp_path / "store")) == EXIT_USAGE
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            "1 x a FIFO (named pipe), not a regular file; 2 x indexed before, holding no "
            "conversation (--verbose lists each skipped file)"
        )
    )


def test_an_empty_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert main(_index(tmp_path / "empty", tmp_path / "store")) == EXIT_USAGE
    assert capsys.readouterr().err.strip().splitlines() == [
        f"convlab index: no readable transcript found under {tmp_path / 'empty'}: no files "
        "there (--verbose lists each skipped file)"
    ]


def test_a_folder_with_one_transcript_among_junk_is_indexed(tmp_path: Path) -> None:
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "session").symlink_to(sample_data_path() / "transcripts" / "amplifier")
    (mixed / "b.jsonl").write_text("not json\n")
    assert main(_index(mixed, tmp_path / "store")) == EXIT_OK
    assert main(_index(mixed, tmp_path / "store")) == EXIT_OK  # unchanged: still fine
