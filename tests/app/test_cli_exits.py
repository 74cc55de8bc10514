"""The exit-code contract of every subcommand: 0 ok, 1 no results, 2 usage/input/data, 3 bug.

Each subcommand is driven through each class it can reach; a closed pipe, a real Ctrl-C and a
real crash run in a subprocess, where the exit status and stderr are the process's own.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from convlab.app.cli import main
from convlab.app.exits import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NO_RESULTS,
    EXIT_OK,
    EXIT_USAGE,
)
from convlab.paths import REPO_ROOT, sample_data_path
from convlab.store import Store, StoreDamaged

SAMPLE = sample_data_path() / "transcripts"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("exits") / "store"
    assert main(["index", str(SAMPLE), "--store", str(out), "--embedder", "hash", "-q"]) == 0
    return out


@pytest.fixture(autouse=True)
def crash_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Crash reports of these tests go to a temporary cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "convlab"


def _argv(command: str, store: Path, tmp: Path) -> list[str]:
    return {
        "index": ["index", str(SAMPLE), "--store", str(tmp / "fresh"), "--embedder", "hash"],
        "search": ["search", "HNSW", "--store", str(store), "--min-confidence", "0"],
        "show": ["show", "amp-faiss-choice", "--store", str(store)],
        "stats": ["stats", "--store", str(store)],
        "eval": ["eval", "--help"],
    }[command]


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# -- 0: success ------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["index", "search", "show", "stats", "eval"])
def test_success_exits_0(command: str, store: Path, tmp_path: Path) -> None:
    assert main([*_argv(command, store, tmp_path), "-q"]) == EXIT_OK


# -- 1: no results ---------------------------------------------------------------------------
def test_search_without_results_exits_1(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["search", "HNSW", "--store", str(store), "--since", "2099-01-01", "--json"]
    assert main(argv) == EXIT_NO_RESULTS
    out, err = capsys.readouterr()
    assert out == ""
    assert _one_line(err) == "convlab search: no results for 'HNSW' with --since 2099-01-01"


# -- 2: usage, input and data errors ---------------------------------------------------------
USAGE_CASES = [
    ("index", ["index", "{missing}", "--store", "{tmp}/s"], "no such file or directory"),
    ("index", ["index", "{sample}", "--store", "{tmp}/s", "--budget", "4"], "max_tokens must be"),
    ("index", ["index", "{sample}", "--strategy", "nope"], "invalid choice"),
    ("search", ["search", "  ", "--store", "{store}"], "the query is empty"),
    ("search", ["search", "x", "--store", "{missing}"], "no index at"),
    ("search", ["search", "x", "--store", "{store}", "--since", "last week"], "--since expects"),
    ("search", ["search", "x", "--store", "{store}", "--conversation", "nope"], "no conversation"),
    ("search", ["search", "x", "--store", "{store}", "--role", "tool"], "holds no tool output"),
    ("search", ["search", "x", "--store", "{store}", "--project", "nope"], "no session of"),
    ("search", ["search", "x", "--store", "{store}", "--until", "2026-13-01"], "--until expects"),
    ("search", ["search", "x", "--store", "{store}", "-k", "0"], "-k must be at least 1"),
    ("search", ["search", "x", "--store", "{store}", "--mmr", "2"], "mmr lambda"),
    ("search", ["search", "--store", "{store}"], "required: query"),
    ("show", ["show", "no-such-conversation", "--store", "{store}"], "no conversation"),
    ("show", ["show", "amp-faiss-choice", "--turn", "99", "--store", "{store}"], "no turn 99"),
    ("show", ["show", "x", "--store", "{missing}"], "no index at"),
    ("show", ["show", "amp-faiss-choice", "--budget", "-1", "--store", "{store}"], "at least 1"),
    ("stats", ["stats", "--store", "{missing}"], "no index at"),
    ("eval", ["eval", "--strategies", "nope"], "unknown strategies"),
    ("eval", ["eval", "--no-such-flag"], "unrecognized arguments"),
    ("eval", ["eval", "--resurrection", "all"], "all"),
    ("eval", ["eval", "--systems", "{missing}"], "cannot read the experiment file"),
    ("eval", ["eval", "--systems", "{sample}/../queries.jsonl"], "not valid TOML"),
    ("-", ["frobnicate"], "invalid choice"),
]


@pytest.mark.parametrize(("command", "argv", "says"), USAGE_CASES)
def test_usage_errors_exit_2_with_one_line(
    command: str,
    argv: list[str],
    says: str,
    store: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fill = {"store": store, "missing": tmp_path / "missing", "tmp": tmp_path, "sample": SAMPLE}
    assert main([a.format(**fill) for a in argv]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert says in err
    assert "Traceback" not in err
    line = _one_line(err) if "usage:" not in err else None  # or argparse's usage, then a line
    if line is not None and command != "eval":  # the harness words its own one line
        assert line.startswith(f"convlab {command}: ")


def test_a_settings_change_is_refused_with_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["index", str(SAMPLE / "claude_code"), "--store", str(tmp_path / "s"), "-q"]
    assert main([*base, "--embedder", "hash", "--strategy", "isolated"]) == EXIT_OK
    capsys.readouterr()
    assert main([*base, "--embedder", "hash"]) == EXIT_USAGE
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("convlab index: ")
    assert "other settings (strategies, dense): it holds isolated, system " in line
    assert "pass --rebuild" in line


def test_a_locked_store_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "s"
    holder = subprocess.Popen(  # another process holds the store's write lock
        [
            sys.executable,
            "-c",
            "import sys, time; from convlab.store import Store; "
            "lock = Store(sys.argv[1]).lock(); lock.acquire(); print('held', flush=True); "
            "time.sleep(60)",
            str(store),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        argv = ["index", str(SAMPLE), "--store", str(store), "--embedder", "hash", "-q"]
        assert main(argv) == EXIT_USAGE
    finally:
        holder.kill()
        holder.wait()
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("convlab index: another `convlab index` is writing")


@pytest.mark.parametrize("command", ["search", "show", "stats"])
def test_a_damaged_store_exits_2(
    command: str,
    store: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def damaged(*_: Any, **__: Any) -> Any:
        raise StoreDamaged("v1/units.parquet is damaged (size 10, expected 12); run convlab index")

    for name in ("frame", "index", "manifest"):
        monkeypatch.setattr(Store, name, damaged)
    assert main(_argv(command, store, tmp_path)) == EXIT_USAGE
    line = _one_line(capsys.readouterr().err)
    assert line == (
        f"convlab {command}: v1/units.parquet is damaged (size 10, expected 12); run convlab index"
    )


# -- 3: internal errors ----------------------------------------------------------------------
def _break(command: str, monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    """Make the code behind ``command`` raise ``exc`` (a bug, for the test)."""

    def boom(*_: Any, **__: Any) -> Any:
        raise exc

    if command == "index":
        monkeypatch.setattr(Store, "update", boom)
    elif command == "search":
        searching = importlib.import_module("convlab.store.search")
        monkeypatch.setattr(searching.StoreSearch, "search", boom)
    elif command in ("show", "stats"):
        monkeypatch.setattr(Store, "frame", boom)
        monkeypatch.setattr(Store, "manifest", boom)
    else:
        import convlab.evaluation.compare

        monkeypatch.setattr(convlab.evaluation.compare, "run_comparison", boom)


@pytest.mark.parametrize("command", ["index", "search", "show", "stats", "eval"])
def test_internal_errors_exit_3_and_write_the_traceback(
    command: str,
    store: Path,
    tmp_path: Path,
    crash_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _break(command, monkeypatch, RuntimeError("boom\nsecond line"))
    argv = [*_argv(command, store, tmp_path), "-q"]
    if command == "eval":
        argv = ["eval", "--strategies", "isolated"]
    assert main(argv) == EXIT_INTERNAL
    line = _one_line(capsys.readouterr().err)
    (crash,) = crash_home.glob("crash-*.txt")
    assert line == (
        f"convlab {command}: internal error (RuntimeError: boom second line); the traceback is "
        f"in {crash} (--debug prints it)"
    )
    report = crash.read_text()
    assert "Traceback (most recent call last)" in report
    assert report.rstrip().endswith("RuntimeError: boom\nsecond line")
    assert not list(crash_home.glob(".*tmp"))  # no half-written report left behind
    assert crash.stat().st_mode & 0o777 == 0o600  # a traceback can quote the query


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_prints_the_traceback_instead(
    where: str,
    store: Path,
    tmp_path: Path,
    crash_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _break("search", monkeypatch, RuntimeError("boom"))
    argv = _argv("search", store, tmp_path)
    argv = ["--debug", *argv] if where == "before" else [*argv, "--debug"]
    assert main(argv) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last)")
    assert "RuntimeError: boom" in err
    assert err.strip().splitlines()[-1] == "convlab search: internal error (RuntimeError)"
    assert not crash_home.exists()


def test_a_crash_report_falls_back_to_the_temp_dir(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "not-a-dir").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-a-dir"))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    _break("stats", monkeypatch, RuntimeError("boom"))
    assert main(_argv("stats", store, tmp_path)) == EXIT_INTERNAL
    (crash,) = (tmp_path / "tmp").glob("crash-*.txt")
    assert str(crash) in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("command", ["index", "search", "show", "stats", "eval"])
def test_keyboard_interrupt_exits_130(
    command: str,
    store: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _break(command, monkeypatch, KeyboardInterrupt())
    argv = [*_argv(command, store, tmp_path), "-q"]
    if command == "eval":
        argv = ["eval", "--strategies", "isolated"]
    assert main(argv) == EXIT_INTERRUPTED
    assert _one_line(capsys.readouterr().err) == f"convlab {command}: interrupted"


# -- in a real process -----------------------------------------------------------------------
def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1", **extra}
    env.pop("COLUMNS", None)
    return env


def _convlab(*argv: str, prelude: str = "") -> list[str]:
    """The command line of a process that runs ``prelude`` (a patch), then ``convlab argv``."""
    code = f"import sys\n{prelude}\nfrom convlab.app.cli import main\nsys.exit(main(sys.argv[1:]))"
    return [sys.executable, "-c", code, *argv]


def test_a_closed_pipe_exits_quietly(store: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte is written: EPIPE for sure
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "convlab.app.cli",
                "search",
                "the",
                "--store",
                str(store),
                "--min-confidence",
                "0",
            ],  # a query of stopwords: no confident match
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert proc.stderr == ""
    assert proc.returncode == EXIT_BROKEN_PIPE


def test_head_reads_the_first_hit(store: Path) -> None:
    search = f"search the --store {store} -k 50 --min-confidence 0"
    cmd = f"{sys.executable} -m convlab.app.cli {search} | head -1"
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c", cmd],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
        check=False,
    )
    assert proc.stdout.startswith(" 1. ")
    assert proc.stderr == ""
    assert proc.returncode in (EXIT_OK, EXIT_BROKEN_PIPE)  # 141 when head left before the end


def test_a_real_crash_in_a_process(store: Path, tmp_path: Path) -> None:
    prelude = (
        "import convlab.store\n"
        "def boom(*a, **k):\n    raise RuntimeError('boom')\n"
        "convlab.store.Store.manifest = boom"
    )
    proc = subprocess.run(
        _convlab("stats", "--store", str(store), prelude=prelude),
        capture_output=True,
        text=True,
        env=_env(XDG_CACHE_HOME=str(tmp_path / "c")),
        timeout=120,
        check=False,
    )
    assert proc.returncode == EXIT_INTERNAL
    assert proc.stdout == ""
    line = _one_line(proc.stderr)
    (crash,) = (tmp_path / "c" / "convlab").glob("crash-*.txt")
    assert line.endswith(f"the traceback is in {crash} (--debug prints it)")
    assert "convlab/app/cli" in crash.read_text()


def test_ctrl_c_in_a_process_exits_130(tmp_path: Path) -> None:
    prelude = (
        "import time, convlab.store\nconvlab.store.Store.update = lambda *a, **k: time.sleep(60)"
    )
    argv = ["index", str(SAMPLE), "--store", str(tmp_path / "s"), "--embedder", "hash"]
    proc = subprocess.Popen(
        _convlab(*argv, prelude=prelude), stderr=subprocess.PIPE, text=True, env=_env()
    )
    assert proc.stderr is not None
    assert proc.stderr.readline().startswith("convlab index: indexing 1 path")
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == EXIT_INTERRUPTED
    assert proc.stderr.read() == "convlab index: interrupted\n"


def test_an_error_line_never_carries_control_bytes_or_surrogates() -> None:
    from convlab.app.exits import one_line

    line = one_line(ValueError("bad name 'x\x1b[31m'\n  in caf\udce9.jsonl \u202e"))
    assert line == "bad name 'x\\x1b[31m' in caf\\udce9.jsonl \\u202e"
    line.encode("utf-8")  # printable on a UTF-8 terminal
