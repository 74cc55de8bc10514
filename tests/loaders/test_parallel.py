"""Loading in worker processes gives the corpus a serial load gives, and errors cross back whole."""

from __future__ import annotations

import json
import pickle
import shutil
import tempfile
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from convlab.loaders import LoadError, load
from convlab.loaders.corpus import merge_parts
from convlab.loaders.registry import _chunks, _load_part, _load_serial, _read_part, _sizes
from convlab.paths import sample_data_path


def _assert_same(a, b) -> None:  # type: ignore[no-untyped-def]
    for name in ("conversations", "messages", "blocks"):
        assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)
    assert_frame_equal(a.report.files, b.report.files)
    assert_frame_equal(a.report.skipped, b.report.skipped)
    assert (a.queries is None) == (b.queries is None)
    if a.queries is not None:
        assert_frame_equal(a.queries, b.queries, check_exact=True)


@pytest.mark.slow
def test_two_workers_load_what_one_loads() -> None:
    root = sample_data_path() / "transcripts"
    _assert_same(load(root, workers=2), load(root, workers=1))


def test_a_worker_part_reads_back_as_the_corpus_it_loaded(
    tmp_path: Path, transcripts: Path, locomo_file: Path
) -> None:
    # workers hand their corpus back as Arrow files; LoCoMo's part carries queries too
    for files in (sorted((transcripts / "claude_code").rglob("*.jsonl")), [locomo_file]):
        out = _load_part(files, None, False, str(tmp_path / "part"))
        _assert_same(_read_part(out), _load_serial(files, None, False))
        for f in tmp_path.iterdir():
            f.unlink()


def test_parallel_load_leaves_no_temporary_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    root = sample_data_path() / "transcripts"
    _assert_same(load(root, workers=2), load(root, workers=1))
    bad = tmp_path / "bad"
    shutil.copytree(root, bad)
    with sorted(bad.rglob("*.jsonl"))[0].open("a") as fh:
        fh.write("{not json\n")
    with pytest.raises(LoadError):
        load(bad, strict=True, workers=2)
    assert list(scratch.iterdir()) == []


def test_real_samples_merged_from_one_chunk_per_file_equal_a_serial_load(
    transcripts: Path,
) -> None:
    files = sorted(p for p in transcripts.rglob("*") if p.is_file())
    assert len(files) > 10
    serial = _load_serial(files, None, False)
    merged = merge_parts([_load_serial([f], None, False) for f in files])
    _assert_same(merged, serial)


def _session_lines(session: str, prompts: list[str], title: str | None) -> str:
    lines = []
    if title:
        lines.append({"type": "summary", "summary": title, "leafUuid": "x"})
    for i, text in enumerate(prompts):
        base = {"sessionId": session, "timestamp": f"2026-01-0{i + 1}T10:00:00Z"}
        lines.append(
            {
                **base,
                "type": "user",
                "uuid": f"{text}-u",
                "parentUuid": None,
                "message": {"role": "user", "content": text},
            }
        )
        lines.append(
            {
                **base,
                "type": "assistant",
                "uuid": f"{text}-a",
                "parentUuid": f"{text}-u",
                "message": {
                    "id": f"m-{text}",
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"answer to {text}"}],
                },
            }
        )
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def test_a_conversation_split_across_chunks_continues_its_numbering(tmp_path: Path) -> None:
    # one session resumed into a second file; the chunks split them apart
    (tmp_path / "a.jsonl").write_text(_session_lines("s1", ["one", "two"], None))
    (tmp_path / "b.jsonl").write_text(_session_lines("s2", ["other"], "Other"))
    (tmp_path / "c.jsonl").write_text(_session_lines("s1", ["three"], "First title"))
    files = sorted(tmp_path.glob("*.jsonl"))
    serial = _load_serial(files, "claude_code", False)
    merged = merge_parts([_load_serial([f], "claude_code", False) for f in files])
    _assert_same(merged, serial)
    s1 = merged.messages.filter(pl.col("conversation_id") == "s1")
    assert s1["message_index"].to_list() == [0, 1, 2, 3, 4, 5]
    assert s1["message_id"].to_list()[-1] == "s1:m5"
    conv = merged.conversations.filter(pl.col("conversation_id") == "s1").row(0, named=True)
    assert conv["title"] == "First title"
    assert (conv["started_at"].day, conv["ended_at"].day) == (1, 2)


def test_chunks_keep_order_and_cover_every_file(tmp_path: Path) -> None:
    files = []
    for i, size in enumerate([10, 10, 10, 70, 5, 5]):
        p = tmp_path / f"{i}.jsonl"
        p.write_bytes(b"x" * size)
        files.append(p)
    chunks = _chunks(files, _sizes(files), 3)
    assert [f for c in chunks for f in c] == files
    assert chunks == [files[:3], files[3:4], files[4:]]


def test_strict_errors_cross_back_from_a_worker(tmp_path: Path) -> None:
    shutil.copytree(sample_data_path() / "transcripts", tmp_path / "t")
    bad = sorted((tmp_path / "t").rglob("*.jsonl"))[-1]
    with bad.open("a") as fh:
        fh.write("{not json\n")
    err = pickle.loads(pickle.dumps(LoadError(bad, 7, "invalid JSON")))
    assert (err.path, err.line, err.reason) == (str(bad), 7, "invalid JSON")
    with pytest.raises(LoadError) as info:
        load(tmp_path / "t", strict=True, workers=2)
    assert info.value.path == str(bad)
    assert info.value.line == len(bad.read_text().splitlines())


def test_workers_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="workers"):
        load(sample_data_path() / "transcripts", workers=0)
