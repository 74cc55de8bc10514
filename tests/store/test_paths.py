"""Paths are paths (issue 25, items 5 and 8): a store under ``st[1]``, a file name not UTF-8.

On the code before (commit 14bdfb6) polars read ``st[1]/.../units.parquet`` as a glob that
matches nothing, so ``stats`` and ``search`` failed on a store ``index`` had just written, and a
file named ``b"caf\\xe9.jsonl"`` was stored as ``caf\\ufffd.jsonl``, a path that does not open.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK
from convlab.paths import path_text, sample_data_path, text_path
from convlab.store import Store

SAMPLE = sample_data_path() / "transcripts"
NODE_LEAK = SAMPLE / "claude_code" / "-home-dev-cc-node-leak" / "cc-node-leak.jsonl"


@pytest.mark.parametrize("name", ["st[1]", "st*", "st?{a,b}"])
def test_a_store_whose_path_looks_like_a_glob(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / name)
    assert main(["index", str(SAMPLE), "--store", store, "--embedder", "hash", "-q"]) == EXIT_OK
    capsys.readouterr()
    for argv in (
        ["stats"],
        ["stats", "--verify"],
        ["search", "HNSW", "-k", "2"],
        ["search", "HNSW", "-k", "2", "--hybrid"],
        ["search", "HNSW", "-k", "2", "--lexical"],
        ["show", "amp-faiss-choice"],
    ):
        assert main([*argv, "--store", store]) == EXIT_OK, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "verified: all" in out
    assert "Choosing a FAISS index" in out
    # the repair suggested for a store says "unchanged" and is right to: nothing is damaged
    assert main(["index", str(SAMPLE), "--store", store, "--embedder", "hash"]) == EXIT_OK
    assert "(unchanged)" in capsys.readouterr().out


@pytest.mark.skipif(sys.platform != "linux", reason="a file name that is not UTF-8 needs Linux")
def test_a_file_name_that_is_not_utf8_is_stored_whole(tmp_path: Path) -> None:
    from convlab.embed import HashEmbedder
    from convlab.store import StoreConfig

    folder = tmp_path / "history"
    folder.mkdir()
    raw = os.fsencode(folder) + b"/caf\xe9.jsonl"
    shutil.copy(NODE_LEAK, os.fsdecode(raw))
    store = Store(tmp_path / "st")
    summary = store.update([folder], config=StoreConfig(), embedder=HashEmbedder())
    assert summary.skipped == []
    assert summary.conversations == 1
    for frame in ("conversations", "messages"):
        paths = set(store.frame(frame)["source_path"])
        assert paths == {str(folder) + "/caf\x00e9.jsonl"}, frame
        (stored,) = paths
        assert os.fsencode(text_path(stored)) == raw
        assert text_path(stored).read_bytes() == NODE_LEAK.read_bytes()
    files = store.manifest().files
    assert list(files) == [os.fsdecode(raw)]
    assert files[os.fsdecode(raw)].conversations == ["cc-node-leak"]
    again = store.update([folder], config=StoreConfig(), embedder=HashEmbedder())
    assert not again.wrote_version
    assert again.files_unchanged == 1


def test_path_text_is_lossless_and_leaves_utf8_alone() -> None:
    names = [b"/a/caf\xe9.jsonl", b"/a/\xff\xfe\x80", "/a/café [1]/x\\y.jsonl".encode()]
    for raw in names:
        text = path_text(os.fsdecode(raw))
        text.encode("utf-8")  # a frame can hold it
        assert os.fsencode(text_path(text)) == raw
    assert path_text("/a/café [1]/x\\y.jsonl") == "/a/café [1]/x\\y.jsonl"
    assert len({path_text(os.fsdecode(r)) for r in names}) == len(names)


@pytest.mark.skipif(sys.platform != "linux", reason="a file name that is not UTF-8 needs Linux")
def test_search_gives_a_source_path_that_opens(tmp_path: Path) -> None:
    import json
    import subprocess

    folder = tmp_path / "history"
    folder.mkdir()
    raw = os.fsencode(folder) + b"/caf\xe9.jsonl"
    shutil.copy(NODE_LEAK, os.fsdecode(raw))
    cli = [sys.executable, "-m", "convlab"]
    store = str(tmp_path / "st")
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(
        [*cli, "index", os.fsdecode(folder), "--store", store, "--embedder", "hash", "-q"],
        capture_output=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    found = subprocess.run(
        [*cli, "search", "node", "--store", store, "--lexical", "--json", "-k", "1"],
        capture_output=True,
        env=env,
        timeout=300,
    )
    assert found.returncode == 0, found.stderr
    hit = json.loads(found.stdout.decode("utf-8").splitlines()[0])
    assert os.fsencode(hit["source_path"]) == raw  # open() takes it as it is
    human = subprocess.run(
        [*cli, "search", "node", "--store", store, "--lexical", "-k", "1"],
        capture_output=True,
        env=env,
        timeout=300,
    )
    assert human.returncode == 0, human.stderr
    assert "caf\\xe9.jsonl" in human.stdout.decode("utf-8")
