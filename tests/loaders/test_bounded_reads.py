"""Every read is bounded by what it can need, and nothing is reserved for a limit up front.

The trial's reproductions: ``read_regular(limit=16 GiB)`` called ``read(limit + 1)``, so under
``ulimit -v 8000000`` every experiment file failed with MemoryError; a 3 GB sparse store
manifest took ``search`` and ``stats`` to 3.9 GB before they exited, ``index`` to MemoryError
(exit 3); a 12 GB sparse marker passed 8 GB; a LoCoMo file with a 100 MB question passed 8 GB.
Each runs here in a subprocess whose address space is capped (``RLIMIT_AS``), with sparse files
(``truncate``): no disk is used, and reading one would fail on the cap.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from convlab.errors import LoadError
from convlab.files import CONFIG, DATASET, read_regular
from convlab.loaders.base import MAX_QUESTION_CHARS
from convlab.loaders.locomo import read_locomo
from convlab.paths import sample_data_path
from tests.helpers import locomo_file

ROOT = Path(__file__).resolve().parents[2]
GiB = 1 << 30


def _capped(code: str, cap: int) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a Python whose address space is capped at ``cap`` bytes."""
    prelude = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )


def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as fh:
        fh.truncate(size)
    return path


def test_a_small_file_under_a_huge_limit_reserves_nothing(tmp_path: Path) -> None:
    small = tmp_path / "experiment.toml"
    small.write_text('name = "x"\n')
    code = (
        "from convlab.files import read_regular, DATASET\n"
        f"print(read_regular({str(small)!r}, limit=DATASET))\n"
    )
    done = _capped(code, 1 * GiB)  # the 16 GiB limit is 16 times the cap
    assert done.returncode == 0, done.stderr[-400:]
    assert done.stdout.strip() == "b'name = \"x\"\\n'"


def test_a_file_over_its_limit_is_refused_before_a_byte_is_read(tmp_path: Path) -> None:
    sparse = _sparse(tmp_path / "big.json", 3 * GiB)
    with pytest.raises(LoadError, match=r"larger than the 16 MiB limit for a config file"):
        read_regular(sparse, limit=CONFIG)


def test_a_file_that_grows_while_read_is_refused(tmp_path: Path) -> None:
    # /proc files report size 0 and hold more: the limit is still enforced on what is read
    with pytest.raises(LoadError, match=r"larger than the 10 bytes limit"):
        read_regular("/proc/self/status", limit=10)
    assert read_regular("/proc/self/status", limit=DATASET).startswith(b"Name:")


def _store(tmp_path: Path) -> Path:
    from convlab.app.cli import main

    store = tmp_path / "store"
    argv = ["index", str(sample_data_path() / "transcripts"), "--store", str(store)]
    assert main([*argv, "--embedder", "hash", "-q", "--system", "bm25:message"]) == 0
    return store


def _cli(argv: list[str], cap: int) -> subprocess.CompletedProcess[str]:
    code = f"import sys\nfrom convlab.app.cli import main\nsys.exit(main({argv!r}))\n"
    return _capped(code, cap)


@pytest.mark.parametrize("command", ["stats", "search", "index"])
def test_a_3_gb_sparse_store_manifest_exits_2_within_a_small_cap(
    command: str, tmp_path: Path
) -> None:
    store = _store(tmp_path)
    manifest = (store / "current").resolve() / "manifest.json"
    manifest.unlink()
    _sparse(manifest, 3 * GiB)
    argv = {
        "stats": ["stats", "--store", str(store)],
        "search": ["search", "faiss", "--store", str(store)],
        "index": [
            "index",
            str(sample_data_path() / "transcripts"),
            "--store",
            str(store),
            "--embedder",
            "hash",
            "-q",
            "--system",
            "bm25:message",
        ],
    }[command]
    done = _cli(argv, 3 * GiB)  # the manifest alone would take the whole cap
    expected = 0 if command == "index" else 2  # index repairs the damaged version
    assert done.returncode == expected, done.stderr[-600:]
    if command != "index":
        assert "larger than the 256 MiB limit for a store manifest" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    else:
        assert "repaired:" in done.stdout


def test_a_12_gb_sparse_marker_exits_2(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    _sparse(store / "convlab-store.json", 12 * GiB)
    argv = ["index", str(sample_data_path() / "transcripts"), "--store", str(store)]
    done = _cli([*argv, "--embedder", "hash", "-q"], 3 * GiB)
    assert done.returncode == 2, done.stderr[-600:]
    assert "larger than the 4 KiB limit" in done.stderr  # store.marker.MARKER_LIMIT
    assert len(done.stderr.strip().splitlines()) == 1


def _locomo(path: Path, question: str) -> Path:
    qa = [
        {"question": "Where did Ann move?", "answer": "Lisbon", "evidence": ["D1:1"]},
        {"question": question, "answer": "x", "evidence": ["D1:2"]},
    ]
    return locomo_file(
        path, [("Ann", "I moved to Lisbon."), ("Bo", "How is it?")], qa, sample_id="c1"
    )


def test_a_question_longer_than_a_question_can_be_is_refused(tmp_path: Path) -> None:
    path = _locomo(tmp_path / "locomo.json", "why " * (MAX_QUESTION_CHARS // 4 + 1))
    corpus, report = read_locomo(path)
    assert corpus.queries["text"].to_list() == ["Where did Ann move?"]
    assert report["questions"] == 1
    with pytest.raises(LoadError, match=r"c1 qa 1: a question of 16,388 characters, over the"):
        read_locomo(path, strict=True)
    fine = _locomo(tmp_path / "fine.json", "y" * MAX_QUESTION_CHARS)
    assert read_locomo(fine)[0].queries.height == 2
