"""Damage a search reads from is caught before it is used: exit 2 naming the file, no crash.

The trial's reproductions: 16 bytes flipped in ``index/units.arrow`` (``search`` died with a
segfault or a Rust panic, or answered from the damaged units with exit 0), the vectors
overwritten at the same size in both ``vectors.npy`` and ``index.faiss``, and single rows swapped
in either file (wrong hits with exit 0). A small store's index files are hashed whole when a
search opens them; a large one's are sampled, and then each search checks the blocks of the rows
it answers from and their scores against their stored vectors (forced here with 512-byte blocks and
no file hashed whole).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK, EXIT_USAGE
from convlab.index.faisslib import load_faiss
from convlab.index.unit_table import UnitTable
from convlab.paths import sample_data_path
from convlab.store import Store, StoreDamaged
from convlab.store import manifest as store_manifest

SAMPLE = sample_data_path() / "transcripts"
QUERY = "which FAISS index for a million vectors"


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("search-damage") / "store"
    argv = ["index", str(SAMPLE), "--store", str(store), "--embedder", "hash", "-q"]
    assert main(argv) == EXIT_OK
    return store


def _copy(clean: Path, tmp_path: Path) -> tuple[Path, Path]:
    store = tmp_path / "store"
    shutil.copytree(clean, store, symlinks=True)
    return store, (store / "current").resolve() / "index"


def _search(store: Path, capsys: pytest.CaptureFixture[str], k: int = 5) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["search", QUERY, "--store", str(store), "--json", "-k", str(k)])
    out, err = capsys.readouterr()
    return code, out, err


def _unit_ids(index: Path) -> list[str]:
    return UnitTable.open(index).frame()["unit_id"].to_list()


def _refused(store: Path, capsys: pytest.CaptureFixture[str], *names: str) -> str:
    code, out, err = _search(store, capsys)
    assert code == EXIT_USAGE, err
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert any(f"index/{n}:" in err for n in names), err
    assert f"run `convlab stats --verify --store {store}`" in err
    return err


def _swap_faiss(index: Path, i: int, j: int) -> None:
    """Rows ``i`` and ``j`` of the FAISS file swapped (same size, same kind)."""
    faiss = load_faiss()
    path = index / "index.faiss"
    size = path.stat().st_size
    flat = faiss.read_index(str(path))
    stored = flat.reconstruct_n(0, flat.ntotal)
    stored[[i, j]] = stored[[j, i]]
    flat.reset()
    flat.add(stored)
    faiss.write_index(flat, str(path))
    assert path.stat().st_size == size


def _swap_vectors(index: Path, i: int, j: int) -> None:
    path = index / "vectors.npy"
    size = path.stat().st_size
    vectors = np.load(path)
    vectors[[i, j]] = vectors[[j, i]]
    np.save(path, vectors, allow_pickle=False)
    assert path.stat().st_size == size


@pytest.mark.parametrize("seed", range(6))
def test_units_arrow_with_16_bytes_flipped_exits_2(
    seed: int, clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, index = _copy(clean, tmp_path)
    path = index / "units.arrow"
    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    at = rng.randrange(len(data) - 16)
    data[at : at + 16] = bytes(b ^ 0xFF for b in data[at : at + 16])
    path.write_bytes(bytes(data))
    err = _refused(store, capsys, "units.arrow")
    assert "content does not match its SHA-256" in err


def test_vectors_overwritten_at_the_same_size_in_both_files_exit_2(
    clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, index = _copy(clean, tmp_path)
    vectors = np.load(index / "vectors.npy")
    other = np.random.default_rng(0).standard_normal(vectors.shape).astype(np.float32)
    other /= np.linalg.norm(other, axis=1, keepdims=True)  # unit length: the norm check passes
    np.save(index / "vectors.npy", other, allow_pickle=False)
    faiss = load_faiss()
    flat = faiss.read_index(str(index / "index.faiss"))
    flat.reset()
    flat.add(other)
    faiss.write_index(flat, str(index / "index.faiss"))
    _refused(store, capsys, "vectors.npy", "index.faiss")


@pytest.mark.parametrize("where", ["vectors", "faiss"])
def test_a_single_row_swap_exits_2(
    where: str, clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, index = _copy(clean, tmp_path)
    (_swap_vectors if where == "vectors" else _swap_faiss)(index, 3, 40)
    _refused(store, capsys, "vectors.npy" if where == "vectors" else "index.faiss")


@pytest.fixture
def sampled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file sampled as a large one is (512-byte blocks, none hashed whole on open)."""
    monkeypatch.setattr(store_manifest, "BLOCK", 512)
    monkeypatch.setattr(store_manifest, "WHOLE_BYTES", 0)
    monkeypatch.setattr(store_manifest, "SEARCH_BLOCKS", 0)  # only the first and last block


def _sampled_store(tmp_path: Path) -> tuple[Path, Path]:
    store = tmp_path / "store"
    argv = ["index", str(SAMPLE), "--store", str(store), "--embedder", "hash", "-q"]
    # one dense view (index/), searched through its FAISS file (flat searches the vectors)
    assert main([*argv, "--system", "turn_pair", "--index", "hnsw"]) == 0
    return store, (store / "current").resolve() / "index"


def _hit_row(store: Path, index: Path, capsys: pytest.CaptureFixture[str]) -> int:
    code, out, err = _search(store, capsys, k=1)
    assert code == EXIT_OK, err
    unit = json.loads(out.splitlines()[0])["unit_id"]
    return _unit_ids(index).index(unit)


@pytest.mark.parametrize("where", ["both", "vectors"])
def test_a_swap_of_a_hit_is_caught_when_the_files_are_sampled(
    where: str,
    sampled: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A large store: the rows a search answers from are checked, whatever the sample read."""
    store, index = _sampled_store(tmp_path)
    files = json.loads((index.parent / "manifest.json").read_text())["version_files"]
    n_blocks = len(files["index/vectors.npy"]["blocks"])
    assert n_blocks > 100  # many blocks: the first and last alone do not cover the rows
    top = _hit_row(store, index, capsys)
    rows = np.load(index / "vectors.npy", mmap_mode="r").shape[0]
    far = (top + rows // 2) % rows  # in another block (a row is 256 bytes: 64 dimensions)
    if where in ("both", "vectors"):
        _swap_vectors(index, top, far)
    if where == "both":
        _swap_faiss(index, top, far)
    err = _refused(store, capsys, "vectors.npy")
    assert "(of the rows searched) does not match its SHA-256" in err


def test_a_faiss_row_swap_is_caught_by_the_scores_when_sampled(
    sampled: None, tmp_path: Path
) -> None:
    """The FAISS file's rows disagree with the vectors: a search through FAISS says so."""
    store, index = _sampled_store(tmp_path)
    opened = Store(store).index()
    query = opened.vectors(np.array([7]))
    assert opened.search(query, 1)[1][0, 0] == 7  # a stored vector finds itself
    sims = opened.vectors(np.arange(len(opened))) @ query[0]
    n = len(opened)
    # a row of another text, in a middle block (the first and last are checked on open)
    far = int(next(r for r in range(n // 2, n) if sims[r] < 0.5))
    _swap_faiss(index, 7, far)
    with pytest.raises(StoreDamaged, match=rf"index\.faiss: row {far} scored 1\.0000, but its"):
        Store(store).index().search(query, 1)


def test_structural_checks_catch_damaged_batches_without_a_crash(
    clean: Path, tmp_path: Path
) -> None:
    """Without the hash (a large file, its damage outside the sample) pyarrow never crashes:
    each batch is validated before use, in a subprocess so that a crash would show."""
    import subprocess
    import sys

    source = (clean / "current").resolve() / "index" / "units.arrow"
    code = (
        "import sys, numpy as np\n"
        "from pathlib import Path\n"
        "from convlab.index.unit_table import UnitTable\n"
        "try:\n"
        "    t = UnitTable.open(Path(sys.argv[1]))\n"
        "    t.rows(np.arange(t.height)); t.frame()\n"
        "except (ValueError, OSError) as exc:\n"
        "    print(type(exc).__name__)\n"
    )
    raw = source.read_bytes()
    root = Path(__file__).resolve().parents[2]
    outcomes = set()
    for seed in range(8):
        folder = tmp_path / f"u{seed}"
        folder.mkdir()
        data = bytearray(raw)
        rng = random.Random(seed)
        at = rng.randrange(len(data) - 16)
        data[at : at + 16] = rng.randbytes(16)
        (folder / "units.arrow").write_bytes(bytes(data))
        done = subprocess.run(
            [sys.executable, "-c", code, str(folder)],
            capture_output=True,
            text=True,
            cwd=root,
            env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
            timeout=120,
        )
        assert done.returncode == 0, (seed, done.returncode, done.stderr[-300:])
        outcomes.add(done.stdout.strip())
    # seeds 0..7 of this file: most flips are caught as invalid Arrow or a failed decompression
    assert outcomes - {""} <= {"ArrowInvalid", "OSError"}
    assert outcomes - {""}
