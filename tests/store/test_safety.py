"""Store safety (issue 16): relative and symlinked store paths, one version per reader, lost work.

Each test here failed on the code before the fix (checked against commit 9d3fb91).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from convlab.embed import HashEmbedder
from convlab.paths import REPO_ROOT
from convlab.specs import IndexSpec
from convlab.store import Store, StoreConfig
from convlab.store.prune import prune, select
from tests.helpers import small_history

CONFIG = StoreConfig(system="turn_pair")


@pytest.fixture
def history(transcripts: Path, tmp_path: Path) -> Path:
    """Three real Claude Code sessions copied into a temp tree."""
    return small_history(transcripts, tmp_path)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CONVLAB_CRASH_AT"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    return env


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "convlab.app.cli", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _index(cwd: Path, history: Path, store: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return _cli(
        cwd, "index", str(history), "--store", store, "--embedder", "hash", "--quiet", *extra
    )


def _units(store: Path) -> int:
    return Store(store).frame("units").height


# -- defect 1: a relative, `.` or symlinked --store deleted the live version ---------------------
@pytest.mark.slow
def test_relative_store_keeps_its_live_version(history: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    first = _index(work, history, "st")
    assert first.returncode == 0, first.stderr
    assert "0 conversations" not in first.stdout
    n = _units(work / "st")
    assert n > 0
    # a second run of the same command finds it unchanged, and a settings change is refused
    again = _index(work, history, "st")
    assert again.returncode == 0, again.stderr
    assert "(unchanged)" in again.stdout
    other = _index(work, history, "st", "--strategy", "isolated")
    assert other.returncode == 2
    assert "rebuild" in other.stderr
    assert _units(work / "st") == n
    stats = _cli(work, "stats", "--store", "st")
    assert stats.returncode == 0, stats.stderr
    assert f"{n} units" in stats.stdout


@pytest.mark.slow
def test_dot_store_keeps_its_version_and_other_files(history: Path, tmp_path: Path) -> None:
    here = tmp_path / "here"
    here.mkdir()
    first = _index(here, history, ".")  # an empty folder becomes a store (issue 25: its marker)
    assert first.returncode == 0, first.stderr
    (here / "venv").mkdir(parents=True)  # names that start with "v" are not versions
    (here / "venv" / "keep.txt").write_text("x")
    (here / "v2-notes").mkdir()
    for _ in range(2):
        run = _index(here, history, ".")
        assert run.returncode == 0, run.stderr
    assert _units(here) > 0
    assert (here / "venv" / "keep.txt").read_text() == "x"
    assert (here / "v2-notes").is_dir()
    assert len([p for p in here.iterdir() if p.name.startswith("v1")]) == 1  # the live version


@pytest.mark.slow
def test_store_through_a_symlink_keeps_its_live_version(history: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    for _ in range(2):
        run = _index(tmp_path, history, "link/st")
        assert run.returncode == 0, run.stderr
    assert _units(real / "st") > 0
    assert Store(tmp_path / "link" / "st").current == Store(real / "st").current


def test_settings_are_checked_before_anything_is_removed(history: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    store.update([history], config=CONFIG, embedder=HashEmbedder())
    live = store.current
    assert live is not None
    leftover = tmp_path / "store" / ".tmp-v1"  # a killed run's temporary version
    leftover.mkdir()
    with pytest.raises(ValueError, match="rebuild"):
        Store(tmp_path / "store").update(
            [history], config=StoreConfig(system="isolated"), embedder=HashEmbedder()
        )
    assert leftover.is_dir()  # nothing removed by a refused run
    assert Store(tmp_path / "store").current == live


# -- defect 6: one version per Store object ---------------------------------------------------
def _check_one_version(s: Store) -> int:
    """Manifest, units and index of ``s`` describe one version; returns its unit count."""
    m = s.manifest()
    units = s.frame("units")
    index = s.index()
    assert m.counts["units"] == units.height == len(index)
    assert index.units["unit_id"].to_list() == units["unit_id"].to_list()
    assert s.frame("conversations").height == m.counts["conversations"]
    return units.height


def test_a_reader_keeps_its_version_while_a_writer_switches(history: Path, tmp_path: Path) -> None:
    later = tmp_path / "later.jsonl"
    shutil.move(history / "-home-u-app" / "tool_heavy.jsonl", later)
    writer = Store(tmp_path / "store")
    writer.update([history], config=CONFIG, embedder=HashEmbedder())
    reader = Store(tmp_path / "store")
    before = reader.manifest().counts["units"]
    pinned = reader.current  # the live version, which the reader's first read pinned
    assert pinned is not None
    shutil.move(later, history / "-home-u-app" / "tool_heavy.jsonl")
    assert writer.update([history], config=CONFIG, embedder=HashEmbedder()).wrote_version
    assert writer.current != pinned
    # the reader still reads the version it opened, whole, although a writer switched
    assert _check_one_version(reader) == before
    assert writer.manifest().counts["units"] > before  # the writer re-pinned to its version
    assert _check_one_version(writer) > before
    reader.refresh()
    assert _check_one_version(reader) > before
    # the old version, no longer read, is removed by the next write
    writer.update([history], config=CONFIG, embedder=HashEmbedder(), rebuild=True)
    assert not pinned.exists()


@pytest.mark.slow
def test_readers_interleaved_with_writers_never_mix_versions(history: Path, tmp_path: Path) -> None:
    away = tmp_path / "away.jsonl"
    moving = history / "-home-u-app" / "tool_heavy.jsonl"
    Store(tmp_path / "store").update([history], config=CONFIG, embedder=HashEmbedder())
    stop = time.monotonic() + 20
    errors: list[BaseException] = []
    sizes: set[int] = set()
    reads = [0]
    writes = [0]

    def write() -> None:
        try:
            while time.monotonic() < stop:
                writer = Store(tmp_path / "store")
                if moving.exists():  # moved away: kept detached until pruned (a smaller store)
                    shutil.move(moving, away)
                    writer.update([history], config=CONFIG, embedder=HashEmbedder())
                    gone = select(writer.manifest(), detached=True)
                    prune(writer, gone, embedder=HashEmbedder(), wait=True)
                else:
                    shutil.move(away, moving)
                    writer.update([history], config=CONFIG, embedder=HashEmbedder())
                writes[0] += 1
        except BaseException as exc:
            errors.append(exc)

    def read() -> None:
        try:
            while time.monotonic() < stop:
                sizes.add(_check_one_version(Store(tmp_path / "store")))
                reads[0] += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write), *(threading.Thread(target=read) for _ in range(2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert writes[0] >= 2
    assert reads[0] >= 10
    assert len(sizes) == 2  # both versions were read, each whole


# -- defect 8: a killed first index keeps the segments embedded before the kill ------------------
_KILLED_INDEX = textwrap.dedent(
    """
    import os, signal, sys
    import convlab.embed.cache
    from convlab.embed import HashEmbedder
    from convlab.store import Store, StoreConfig

    convlab.embed.cache.SEGMENT_TEXTS = 4
    KILL_AFTER = int(sys.argv[3])

    class Dying(HashEmbedder):
        embedded = 0

        def encode(self, texts):
            out = super().encode(texts)
            Dying.embedded += len(texts)
            if KILL_AFTER and Dying.embedded > KILL_AFTER:
                os.kill(os.getpid(), signal.SIGKILL)  # killed with a batch in flight
            return out

    s = Store(sys.argv[2]).update([sys.argv[1]], config=StoreConfig(), embedder=Dying())
    print(s.texts_embedded, s.texts_from_cache, Dying.embedded)
    """
)


def _run_index(history: Path, store: Path, kill_after: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _KILLED_INDEX, str(history), str(store), str(kill_after)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_killed_first_index_keeps_the_flushed_segments(history: Path, tmp_path: Path) -> None:
    clean = _run_index(history, tmp_path / "clean", 0)
    assert clean.returncode == 0, clean.stderr
    total = int(clean.stdout.split()[0])
    assert total > 12  # enough texts for four segments of 4

    killed = _run_index(history, tmp_path / "store", 10)
    assert killed.returncode == -9, killed.stderr
    segments = list((tmp_path / "store" / "cache").rglob("seg-*.npy"))
    assert len(segments) == 2  # batches 1-2 (8 texts) flushed; the 3rd was in flight
    assert not Store(tmp_path / "store").exists()

    rerun = _run_index(history, tmp_path / "store", 0)
    assert rerun.returncode == 0, rerun.stderr
    embedded, from_cache, model_texts = map(int, rerun.stdout.split())
    assert (embedded, from_cache, model_texts) == (total - 8, 8, total - 8)
    a, b = Store(tmp_path / "clean").index(), Store(tmp_path / "store").index()
    assert a.units["unit_id"].to_list() == b.units["unit_id"].to_list()
    assert np.array_equal(a.vectors(np.arange(len(a))), b.vectors(np.arange(len(b))))


def test_a_file_gone_or_turned_into_a_fifo_after_the_walk_is_a_skip(
    history: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import convlab.store.scan as scan_module

    gone = tmp_path / "gone.jsonl"
    fifo = tmp_path / "late.jsonl"
    os.mkfifo(fifo)  # the walk would skip it; here it is listed as if swapped in afterwards
    walk = scan_module.candidate_files

    def listed_then_changed(roots, skipped=None):  # type: ignore[no-untyped-def]
        yield from walk(roots, skipped)
        yield gone
        yield fifo

    monkeypatch.setattr(scan_module, "candidate_files", listed_then_changed)
    summary = Store(tmp_path / "store").update([history], config=CONFIG, embedder=HashEmbedder())
    reasons = {Path(p).name: r for p, _, r in summary.skipped}
    assert reasons["gone.jsonl"].startswith("cannot read file")
    assert "FIFO" in reasons["late.jsonl"]
    assert summary.wrote_version


def test_changed_redaction_rules_read_every_file_again(
    history: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import convlab.store.update as store_module

    store = Store(tmp_path / "store")
    first = store.update([history], config=CONFIG, embedder=HashEmbedder())
    same = Store(store.directory).update([history], config=CONFIG, embedder=HashEmbedder())
    assert (same.files_read, same.reread, same.wrote_version) == (0, "", False)
    monkeypatch.setattr(store_module, "RULES_VERSION", "rules-of-tomorrow")
    again = Store(store.directory).update([history], config=CONFIG, embedder=HashEmbedder())
    assert again.reread == "redaction rules changed"
    assert again.files_read == first.files_read == 3
    assert again.texts_embedded == 0  # the texts did not change: all from the cache
    assert Store(store.directory).manifest().redact_rules == "rules-of-tomorrow"


@pytest.mark.parametrize(
    ("field", "value", "names"),
    [
        ("index", IndexSpec("annoy"), "index_kind must be one of .*ivfpq"),
        ("redact", "x", "redact must be one of .*all"),
    ],
)
def test_store_config_names_the_valid_choices(field: str, value: object, names: str) -> None:
    with pytest.raises(ValueError, match=names):
        StoreConfig(**{field: value})  # type: ignore[arg-type]
