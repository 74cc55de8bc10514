"""Search checks a sample of content on open (issue 25, item 7).

The stored vectors are permuted (each row keeps unit length; the FAISS file is rebuilt from the
permuted rows, so both files keep their sizes and agree with each other): only the manifest's
SHA-256 can tell. On the code before (commit 14bdfb6) ``search`` returned another top hit with
exit 0 until ``stats --verify`` or ``index`` ran; now it exits 2 naming the file, and ``index``
repairs the store (the same top hit again).

Run with the real 1 MiB blocks (a small store: each file hashed whole) and with 4 KiB blocks
(every file has block digests: the sampled path that a 100k-unit store takes).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK, EXIT_USAGE
from convlab.index.vector import load_faiss
from convlab.paths import sample_data_path
from convlab.store import manifest as store_manifest

SAMPLE = sample_data_path() / "transcripts"
QUERY = "which FAISS index for a million vectors"


def _top(store: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    argv = ["search", QUERY, "--store", str(store), "--json", "-k", "1", "--min-confidence", "0"]
    assert main(argv) == EXIT_OK
    return json.loads(capsys.readouterr().out.splitlines()[0])["unit_id"]


def _permute(version: Path) -> None:
    """Permute the rows of vectors.npy and rebuild index.faiss from them: same sizes, same kind."""
    faiss = load_faiss()
    vectors_path, faiss_path = version / "index" / "vectors.npy", version / "index" / "index.faiss"
    size = (vectors_path.stat().st_size, faiss_path.stat().st_size)
    vectors = np.load(vectors_path)
    perm = np.roll(np.arange(len(vectors)), 1)  # every row moves
    np.save(vectors_path, vectors[perm], allow_pickle=False)
    index = faiss.read_index(str(faiss_path))
    stored = index.reconstruct_n(0, index.ntotal)
    index.reset()
    index.add(stored[perm])
    faiss.write_index(index, str(faiss_path))
    assert (vectors_path.stat().st_size, faiss_path.stat().st_size) == size
    norms = np.linalg.norm(np.load(vectors_path), axis=1)
    assert np.allclose(norms, 1.0, atol=1e-4)


@pytest.mark.parametrize("block", [1 << 20, 4096])
def test_permuted_vectors_are_caught_by_search_and_repaired_by_index(
    block: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(store_manifest, "BLOCK", block)
    store = tmp_path / "store"
    index_argv = ["index", str(SAMPLE), "--store", str(store), "--embedder", "hash", "-q"]
    assert main(index_argv) == EXIT_OK
    version = store / os.readlink(store / "current")
    files = json.loads((version / "manifest.json").read_text())["version_files"]
    assert ("blocks" in files["index/vectors.npy"]) == (block == 4096)
    top = _top(store, capsys)
    _permute(version)
    assert main(["search", QUERY, "--store", str(store), "--json", "-k", "1"]) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip() == (
        f"convlab search: {version / 'index' / 'vectors.npy'}: content does not match its "
        f"SHA-256; run `convlab stats --verify --store {store}` to check every file and "
        f"`convlab index --store {store}` to repair"
    )
    assert main(index_argv) == EXIT_OK
    assert "repaired:" in capsys.readouterr().out
    assert _top(store, capsys) == top


def test_index_files_of_a_few_blocks_are_sampled_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Index files of 3 to 8 blocks keep block digests (search samples them); index's own
    sampled check, which samples only files of more than 8 blocks, still reads them whole."""
    first = tmp_path / "first"
    assert main(["index", str(SAMPLE), "--store", str(first), "--embedder", "hash", "-q"]) == 0
    size = (first / "current" / "index" / "vectors.npy").stat().st_size
    monkeypatch.setattr(store_manifest, "BLOCK", size // 4 + 1)  # 4 blocks
    store = tmp_path / "store"
    argv = ["index", str(SAMPLE), "--store", str(store), "--embedder", "hash", "-q"]
    assert main(argv) == EXIT_OK
    files = json.loads((store / "current" / "manifest.json").read_text())["version_files"]
    assert len(files["index/vectors.npy"]["blocks"]) == 4
    # every view's index files keep block digests (search samples each), no other file does
    assert all("blocks" not in r for k, r in files.items() if not store_manifest.index_file(k))
    assert main(argv) == EXIT_OK  # the sampled check of an unchanged index (no ValueError)
    _top(store, capsys)
    _permute(store / os.readlink(store / "current"))
    assert main(["search", QUERY, "--store", str(store), "-k", "1"]) == EXIT_USAGE
    assert "vectors.npy: content does not match its SHA-256" in capsys.readouterr().err


def test_the_benchmark_of_the_check_runs_and_writes_json(tmp_path: Path) -> None:
    """``eval.bench_search_open`` (the README's figure) runs at a small size and writes JSON."""
    import subprocess
    import sys

    argv = ["--out", str(tmp_path), "--units", "3000", "--sessions", "10", "--turns", "100"]
    root = Path(__file__).resolve().parents[2]  # scripts are run, never imported by tests
    done = subprocess.run(
        [sys.executable, "-m", "eval.bench_search_open", *argv, "--repeat", "3"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "bench_search_open.json").read_text())
    assert result["units"] == 3000
    assert result["index_file_bytes"]["index/vectors.npy"] == 128 + 3000 * 384 * 4
    assert result["sample_check_seconds"] > 0
    assert result["search_blocks"] == 2
