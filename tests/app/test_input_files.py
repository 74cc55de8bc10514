"""FIFO everywhere: every input file the package reads, given a FIFO or ``/dev/zero``.

Each input is driven through its real entry point in a subprocess with a timeout, so a reader
that blocks on the FIFO or reads ``/dev/zero`` forever fails the test instead of hanging it. The
expected answer is exit 2 with one line on stderr naming the file.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from convlab.paths import REPO_ROOT

TIMEOUT_S = 60
MEMORY = 4 << 30
"""The address space a run may take: a reader of ``/dev/zero`` fails fast, not the machine."""
SAMPLE = REPO_ROOT / "data" / "sample"
QUERY = json.dumps({"query_id": "q1", "text": "which tests failed"}) + "\n"
JUDGMENT = (
    json.dumps({"query_id": "q1", "doc_id": "d", "grade": 2, "assessor": "a", "time": "t"}) + "\n"
)

# a library reader with no command of its own, run as a program: exit 2 and the error's line
_LIBRARY = """
import sys
from convlab.errors import LoadError
module, name, path = sys.argv[1:]
try:
    getattr(__import__(module, fromlist=[name]), name)(path)
except LoadError as exc:
    print(exc, file=sys.stderr)
    sys.exit(2)
"""


def _library(module: str, name: str) -> Callable[[Path, Path], list[str]]:
    def argv(bad: Path, tmp: Path) -> list[str]:
        return [sys.executable, "-c", _LIBRARY, module, name, str(bad)]

    return argv


def _convlab(*args: str) -> list[str]:
    return [sys.executable, "-m", "convlab", *args]


def _judge(queries: Path, qrels: Path, tmp: Path) -> list[str]:
    return _convlab(
        "judge",
        str(queries),
        "--data",
        str(SAMPLE / "transcripts"),
        "--qrels",
        str(qrels),
        "--assessor",
        "ana",
        "--embedder",
        "hash",
        "--cache",
        str(tmp / "cache"),
    )


def _labelled_folder(tmp: Path, bad: Path, name: str) -> Path:
    """A labelled folder (the sample's layout) whose file ``name`` is ``bad``."""
    folder = tmp / "labelled"
    folder.mkdir()
    (folder / "transcripts").symlink_to(SAMPLE / "transcripts")
    (folder / "queries.jsonl").write_text(QUERY)
    target = folder / name
    if target.exists():
        target.unlink()
    target.symlink_to(bad)
    return folder


def _eval(*args: str) -> Callable[[Path, Path], list[str]]:
    def argv(bad: Path, tmp: Path) -> list[str]:
        return _convlab("eval", *[str(bad) if a == "BAD" else a for a in args], "--out", str(tmp))

    return argv


def _eval_folder(name: str) -> Callable[[Path, Path], tuple[list[str], Path]]:
    def argv(bad: Path, tmp: Path) -> tuple[list[str], Path]:
        folder = _labelled_folder(tmp, bad, name)
        return _convlab("eval", "--data", str(folder), "--out", str(tmp / "out")), folder / name

    return argv


def _judge_queries(bad: Path, tmp: Path) -> list[str]:
    return _judge(bad, tmp / "qrels.jsonl", tmp)


def _judge_qrels(bad: Path, tmp: Path) -> list[str]:
    (tmp / "queries.jsonl").write_text(QUERY)
    return _judge(tmp / "queries.jsonl", bad, tmp)


def _judge_agreement(bad: Path, tmp: Path) -> list[str]:
    (tmp / "b.jsonl").write_text(JUDGMENT)
    return _convlab("judge", "agreement", str(bad), str(tmp / "b.jsonl"))


def _eval_run_systems(bad: Path, tmp: Path) -> list[str]:
    return [sys.executable, "-m", "eval.run", "--systems", str(bad), "--out", str(tmp)]


INPUTS = {
    "judge queries": _judge_queries,
    "judge judgments": _judge_qrels,
    "judge agreement": _judge_agreement,
    "eval --data (a file)": _eval("--data", "BAD"),
    "eval --data queries.jsonl": _eval_folder("queries.jsonl"),
    "eval --data qrels.jsonl": _eval_folder("qrels.jsonl"),
    "eval --data sources.json": _eval_folder("sources.json"),
    "eval --systems": _eval("--systems", "BAD"),
    "eval.run --systems": _eval_run_systems,
    "load_labelled": _library("convlab.evaluation.datasets", "load_labelled"),
    "read_queries": _library("convlab.evaluation.queries", "read_queries"),
    "read_qrels (TREC)": _library("convlab.evaluation.queries", "read_qrels"),
    "read_run (TREC)": _library("convlab.evaluation.queries", "read_run"),
    "read_judgments": _library("convlab.evaluation.judgments", "read_judgments"),
    "read_systems": _library("convlab.systems.file", "read_systems"),
    "load_thresholds": _library("convlab.evaluation.thresholds", "load_thresholds"),
    "LoCoMo file": _library("convlab.evaluation.datasets", "locomo"),
    "LongMemEval file": _library("convlab.evaluation.datasets", "longmemeval"),
}


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


@pytest.fixture(params=["fifo", "dev-zero"])
def bad(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A FIFO nobody writes to (opening it for reading blocks), or a link to ``/dev/zero``."""
    if request.param == "fifo":
        path = tmp_path / "bad.jsonl"
        os.mkfifo(path)
        return path
    return Path("/dev/zero")


@pytest.mark.parametrize("entry", sorted(INPUTS))
def test_fifo_everywhere(entry: str, bad: Path, tmp_path: Path) -> None:
    made = INPUTS[entry](bad, tmp_path)
    argv, named = made if isinstance(made, tuple) else (made, bad)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    try:
        done = subprocess.run(
            argv,
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            preexec_fn=_bounded,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{entry}: hung on {bad} for {TIMEOUT_S} s")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1, done.stderr[-2000:]
    assert str(named) in lines[0]
    assert "not a regular file" in lines[0]
    assert not Path("/dev/.zero.lock").exists()  # nothing is made beside a refused file
