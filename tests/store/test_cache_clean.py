"""``convlab index`` removes the embedding cache's leftovers (issue 25, item 8).

A run killed while it wrote a segment leaves ``cache/<model>/.tmp-*.npy``; on the code before
(commit 14bdfb6) nothing called :meth:`CachedEmbedder.clean`, so they stayed for good.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK
from convlab.paths import sample_data_path

PROJECTS = sample_data_path() / "transcripts" / "amplifier" / "projects"
FIRST, SECOND = "-home-dev-amp-faiss-choice", "-home-dev-amp-ts-generics"


def test_index_removes_temporary_segments_of_killed_runs(tmp_path: Path) -> None:
    history = tmp_path / "history" / "projects"
    shutil.copytree(PROJECTS / FIRST, history / FIRST)
    store = tmp_path / "store"
    argv = ["index", str(history.parent), "--store", str(store), "--embedder", "hash", "-q"]
    assert main(argv) == EXIT_OK
    (model,) = (store / "cache").iterdir()
    segments = sorted(p.name for p in model.glob("seg-*.npy"))
    assert segments
    (model / ".tmp-0123456789abcdef.npy").write_bytes(b"\x93NUMPY half a segment")
    (model / ".tmp-fedcba9876543210.npy").write_bytes(b"")
    shutil.copytree(PROJECTS / SECOND, history / SECOND)  # something to index
    assert main(argv) == EXIT_OK
    assert sorted(p.name for p in model.glob(".tmp-*")) == []
    kept = sorted(p.name for p in model.glob("seg-*.npy"))
    assert set(segments) < set(kept)  # every old segment kept, a new one added
