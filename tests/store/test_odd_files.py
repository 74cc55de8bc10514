"""A FIFO or ``/dev/zero`` in a store's own places never hangs or eats memory (issue 25, item 3).

Each command runs in a subprocess with a timeout, so a hang fails the test instead of blocking
it. Readers (``search``, ``stats``) end with exit 2 and one line naming the file; ``index``
repairs what lives in a version (``.readers``, the manifest: the version is rebuilt, as for any
damage) and refuses, with exit 2 and one line, what it must not replace (the store's and the
cache's lock files, a cache segment, the store marker). On the code before (commit 14bdfb6) a
FIFO at ``.readers`` or a cache segment hung ``search`` and ``index --rebuild``, and
``/dev/zero`` as a segment was read until memory ran out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from convlab.paths import REPO_ROOT, sample_data_path

PROJECTS = sample_data_path() / "transcripts" / "amplifier" / "projects"
FIRST, SECOND = "-home-dev-amp-faiss-choice", "-home-dev-amp-ts-generics"
TIMEOUT = 60


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CONVLAB_CRASH_AT"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "convlab.app.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,  # a hang fails here
        check=False,
    )


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


ODD: dict[str, Callable[[Path], None]] = {"FIFO": _fifo, "/dev/zero": _zero}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(history, store): a store of one session; the second session waits in ``more``."""
    base = tmp_path_factory.mktemp("odd")
    history = base / "history" / "projects"
    shutil.copytree(PROJECTS / FIRST, history / FIRST)
    store = base / "store"
    done = _run("index", str(history.parent), "--store", str(store), "--embedder", "hash", "-q")
    assert done.returncode == 0, done.stderr
    return history.parent, store


@pytest.fixture
def copy(built: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path, Path]:
    """(history, store, live version) copied for one test to damage."""
    history, store = built
    shutil.copytree(history, tmp_path / "history", symlinks=True)
    shutil.copytree(store, tmp_path / "store", symlinks=True)
    st = tmp_path / "store"
    return tmp_path / "history", st, st / os.readlink(st / "current")


def _replace(path: Path, odd: str) -> None:
    path.unlink()
    ODD[odd](path)


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _index(history: Path, store: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _run("index", str(history), "--store", str(store), "--embedder", "hash", "-q", *extra)


@pytest.mark.parametrize("odd", list(ODD))
@pytest.mark.parametrize("place", [".readers", "manifest.json"])
def test_a_version_file_is_refused_by_readers_and_repaired_by_index(
    place: str, odd: str, copy: tuple[Path, Path, Path]
) -> None:
    history, store, version = copy
    path = version / place
    _replace(path, odd)
    kind = "a FIFO (named pipe)" if odd == "FIFO" else "a character device"
    for argv in (["search", "faiss", "--embedder", "hash"], ["stats"], ["stats", "--verify"]):
        run = _run(*argv, "--store", str(store))
        assert run.returncode == 2, run.stderr
        line = _one_line(run.stderr)
        if place == ".readers":
            assert line == (
                f"convlab {argv[0]}: {path}: {kind}, not a regular file; run `convlab index "
                f"--store {store}` to repair"
            )
        else:  # the live link points to a version whose manifest is not a file
            assert f"{store / 'current'}: points to {version.name}, which is missing" in line
    repaired = _index(history, store)
    assert repaired.returncode == 0, repaired.stderr
    assert "repaired:" in repaired.stdout
    assert _run("stats", "--store", str(store), "--verify").returncode == 0


@pytest.mark.parametrize("odd", list(ODD))
def test_a_manifest_swapped_after_the_link_was_read(
    odd: str, copy: tuple[Path, Path, Path]
) -> None:
    """The manifest's own reader refuses what is not a regular file (not only ``current``)."""
    _, store, version = copy
    _replace(version / "manifest.json", odd)
    code = (
        "import sys; from pathlib import Path; from convlab.store import StoreDamaged; "
        "from convlab.store.manifest import read_manifest\n"
        "try: read_manifest(Path(sys.argv[1]), Path(sys.argv[2]))\n"
        "except StoreDamaged as exc: print(exc)"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    run = subprocess.run(
        [sys.executable, "-c", code, str(store), str(version)],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert "not a regular file; run `convlab index PATH" in run.stdout, run.stderr


@pytest.mark.parametrize("odd", list(ODD))
@pytest.mark.parametrize("lock", [".lock", "cache"])
def test_a_lock_file_is_refused(lock: str, odd: str, copy: tuple[Path, Path, Path]) -> None:
    history, store, _ = copy
    shutil.copytree(PROJECTS / SECOND, history / "projects" / SECOND)  # texts to embed
    path = store / ".lock"
    if lock == "cache":
        (path,) = (store / "cache").glob("*/.lock")
    _replace(path, odd) if path.exists() else ODD[odd](path)
    run = _index(history, store)
    assert run.returncode == 2, run.stderr
    line = _one_line(run.stderr)
    assert line.startswith(f"convlab index: {path}: ")
    assert line.endswith("not a regular file; remove it (no convlab process holds it)")


@pytest.mark.parametrize("odd", list(ODD))
@pytest.mark.parametrize("rebuild", [False, True])
def test_a_cache_segment_is_refused(rebuild: bool, odd: str, copy: tuple[Path, Path, Path]) -> None:
    history, store, _ = copy
    shutil.copytree(PROJECTS / SECOND, history / "projects" / SECOND)
    (segment,) = (store / "cache").glob("*/seg-*.npy")
    _replace(segment, odd)
    run = _index(history, store, *(["--rebuild"] if rebuild else []))
    assert run.returncode == 2, run.stderr
    line = _one_line(run.stderr)
    assert line.startswith(f"convlab index: embedding cache segment {segment}: ")
    assert "not a regular file; remove it" in line


@pytest.mark.parametrize("odd", list(ODD))
def test_a_store_marker_is_refused(odd: str, copy: tuple[Path, Path, Path]) -> None:
    history, store, _ = copy
    marker = store / "convlab-store.json"
    _replace(marker, odd)
    run = _index(history, store)
    assert run.returncode == 2, run.stderr
    assert _one_line(run.stderr).startswith(f"convlab index: {marker}: ")
