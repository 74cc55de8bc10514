"""Files that are not plain files, in the library and through ``convlab index`` (issue 16 #4).

Outcomes allowed: a corpus (or an index) with the file skipped and named, or one LoadError in
strict mode. Never a hang (a FIFO or ``/dev/zero`` opened), never a traceback. Every in-process
load runs under a SIGALRM deadline and every command under a subprocess timeout, so a hang fails
the test instead of blocking the suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from convlab.files import check, open_regular, walk
from convlab.loaders import LoadError, load, load_files
from convlab.loaders import registry as registry_module
from convlab.loaders.base import CorpusBuilder
from convlab.paths import REPO_ROOT

SESSION = [
    {
        "type": "user",
        "uuid": "u1",
        "sessionId": "s1",
        "timestamp": "2026-01-01T10:00:00Z",
        "message": {"role": "user", "content": "Fix the build"},
    },
    {
        "type": "assistant",
        "uuid": "a1",
        "sessionId": "s1",
        "timestamp": "2026-01-01T10:00:05Z",
        "message": {"id": "m1", "content": [{"type": "text", "text": "Done."}]},
    },
]
FIFO = "a FIFO (named pipe), not a regular file"
CHAR = "a character device, not a regular file"
LOOP = "a symlink loop"


@contextlib.contextmanager
def deadline(seconds: float = 20) -> Iterator[None]:
    """Fail instead of hanging: SIGALRM interrupts a blocking open() or read()."""

    def fire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"still running after {seconds} s: something blocked")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def session(directory: Path, name: str = "s1.jsonl") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    f = directory / name
    f.write_text("\n".join(json.dumps(x) for x in SESSION) + "\n")
    return f


def skips(corpus) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """File name -> reason, for every skip (line 0: the file as a whole)."""
    rows = corpus.report.skipped.rows()
    assert all(line == 0 for _, line, _ in rows)
    return {Path(p).name: r for p, _, r in rows}


def make_hazard(directory: Path, kind: str) -> Path:
    """One file of the given kind in ``directory``; returns its path."""
    if kind == "fifo":
        p = directory / "pipe.jsonl"
        os.mkfifo(p)
    elif kind == "dev_zero":
        p = directory / "zero.jsonl"
        p.symlink_to("/dev/zero")
    elif kind == "dangling":
        p = directory / "gone.jsonl"
        p.symlink_to(directory / "nowhere.jsonl")
    elif kind == "loop":
        p = directory / "loop.jsonl"
        p.symlink_to(directory / "loop2.jsonl")
        (directory / "loop2.jsonl").symlink_to(p)
    else:
        raise ValueError(kind)
    return p


HAZARDS = {
    "fifo": {"pipe.jsonl": FIFO},
    "dev_zero": {"zero.jsonl": CHAR},
    "dangling": {"gone.jsonl": "a dangling symlink (to {dir}/nowhere.jsonl)"},
    "loop": {"loop.jsonl": LOOP, "loop2.jsonl": LOOP},
}


# -- the library ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(HAZARDS))
def test_hazard_in_a_directory_is_skipped_and_named(tmp_path: Path, kind: str) -> None:
    session(tmp_path)
    make_hazard(tmp_path, kind)
    expected = {n: r.format(dir=tmp_path) for n, r in HAZARDS[kind].items()}
    with deadline():
        c = load(tmp_path)
    assert c.blocks["text"].to_list() == ["Fix the build", "Done."]
    assert skips(c) == expected
    assert sorted(Path(p).name for p in c.report.files["source_path"]) == sorted(
        ["s1.jsonl", *expected]
    )
    first = sorted(expected)[0]
    with deadline(), pytest.raises(LoadError, match=rf"{first}:0: "):
        load(tmp_path, strict=True)


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "loop"])
def test_hazard_given_as_the_path_itself(tmp_path: Path, kind: str) -> None:
    p = make_hazard(tmp_path, kind)
    with deadline():
        c = load(p)
    assert c.messages.height == 0
    assert skips(c) == {p.name: HAZARDS[kind][p.name]}
    with deadline(), pytest.raises(LoadError, match=rf"{p.name}:0: "):
        load(p, strict=True)
    with deadline():  # an explicit list is checked the same way
        assert skips(load_files([p])) == {p.name: HAZARDS[kind][p.name]}


def test_a_dangling_symlink_given_as_the_path_is_a_skip(tmp_path: Path) -> None:
    p = make_hazard(tmp_path, "dangling")
    c = load(p)
    assert skips(c) == {"gone.jsonl": f"a dangling symlink (to {tmp_path}/nowhere.jsonl)"}


def test_a_directory_symlink_loop_is_walked_once(tmp_path: Path) -> None:
    session(tmp_path / "a")
    (tmp_path / "a" / "back").symlink_to(tmp_path)  # a/back -> the root: a cycle
    (tmp_path / "alias").symlink_to(tmp_path / "a")  # a second way into a
    with deadline():
        c = load(tmp_path)
    assert c.messages.height == 2  # read once
    assert skips(c) == {
        "back": f"a directory walked already, as {tmp_path}",
        "alias": f"a directory walked already, as {tmp_path / 'a'}",
    }


def test_a_file_linked_twice_is_read_once(tmp_path: Path) -> None:
    f = session(tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "s1.jsonl").symlink_to(f)
    c = load(tmp_path)
    assert c.messages.height == 2
    assert skips(c) == {"s1.jsonl": f"the same file as {f}"}
    assert c.report.skipped["source_path"].to_list() == [str(tmp_path / "b" / "s1.jsonl")]


def test_hidden_names_are_passed_over(tmp_path: Path) -> None:
    session(tmp_path)
    os.mkfifo(tmp_path / ".lock")
    session(tmp_path / ".cache", "s2.jsonl")
    assert [f.path.name for f in walk(tmp_path)] == ["s1.jsonl"]


def test_an_unreadable_file_found_at_open_time_is_a_load_error_not_permission_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tests run as root, who may read anything: the refusal is simulated at os.open (the walk's
    # os.access check passes, as it does when permissions change between walk and read).
    good = session(tmp_path)
    bad = session(tmp_path, "s2.jsonl")
    real_open = os.open

    def refusing_open(path: object, *args: object, **kwargs: object) -> int:
        if Path(str(path)) == bad:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refusing_open)
    c = load(tmp_path)
    assert skips(c) == {"s2.jsonl": "cannot read file (Permission denied)"}
    assert c.messages["source_path"].unique().to_list() == [str(good)]
    with pytest.raises(LoadError, match=r"s2\.jsonl:0: cannot read file \(Permission denied\)"):
        load(tmp_path, strict=True)


NOBODY = 65534


def _as_nobody(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -c code args`` as uid/gid 65534 (real permission checks, not root's)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return subprocess.run(
        [*cmd, sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


@pytest.fixture
def world_dir() -> Iterator[Path]:
    """A directory every user may enter (pytest's tmp_path is private to root)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run a check as another user")
    d = Path(tempfile.mkdtemp(prefix="convlab-perm-"))
    d.chmod(0o777)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


LOAD_AS_NOBODY = """
import json, sys
from convlab.loaders import LoadError, load
c = load(sys.argv[1])
out = {"messages": c.messages.height, "skipped": [list(r) for r in c.report.skipped.rows()]}
try:
    load(sys.argv[1], strict=True)
    out["strict"] = None
except LoadError as exc:
    out["strict"] = str(exc)
print(json.dumps(out))
"""


def test_an_unreadable_file_is_a_counted_skip_for_a_real_user(world_dir: Path) -> None:
    d = world_dir / "h"
    session(d).chmod(0o644)
    bad = session(d, "s2.jsonl")
    bad.chmod(0o000)
    locked = d / "locked"
    session(locked, "s3.jsonl")
    locked.chmod(0o700)  # root's: nobody cannot list it
    d.chmod(0o755)
    run = _as_nobody(LOAD_AS_NOBODY, str(d))
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["messages"] == 2
    assert sorted(out["skipped"]) == [
        [str(locked), 0, "cannot list directory (Permission denied)"],
        [str(bad), 0, "cannot read file (Permission denied)"],
    ]
    # files of a directory come before its subdirectories, as with os.walk
    assert out["strict"] == f"{bad}:0: cannot read file (Permission denied)"


# -- files changed while they are read -----------------------------------------------------------


def test_file_replaced_by_a_fifo_after_detection_is_not_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = session(tmp_path)
    real_detect = registry_module.detect

    def detect_then_swap(path: str | Path) -> str | None:
        name = real_detect(path)
        os.remove(path)
        os.mkfifo(path)  # a reader that opens it now blocks forever
        return name

    monkeypatch.setattr(registry_module, "detect", detect_then_swap)
    with deadline():
        c = load(f)
    assert skips(c) == {"s1.jsonl": FIFO}


@pytest.mark.parametrize("strict", [False, True])
def test_whole_file_json_rewritten_after_detection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, strict: bool
) -> None:
    f = tmp_path / "chat.json"  # a ChatGPT export: whole-file JSON, no line-by-line fallback
    f.write_text(json.dumps([{"title": "t", "mapping": {}, "current_node": "n1"}]))
    real_detect = registry_module.detect

    def detect_then_cut(path: str | Path) -> str | None:
        name = real_detect(path)
        Path(path).write_text('[{"title": "t", "mapping": {}, "curr')  # cut mid-write
        return name

    monkeypatch.setattr(registry_module, "detect", detect_then_cut)
    if strict:
        with pytest.raises(LoadError, match=r"chat\.json:1: invalid JSON"):
            load(f, strict=True)
    else:
        c = load(f)
        # '"curr' starts at char 31: [{"title": "t", "mapping": {}, "curr
        reason = "invalid JSON (Unterminated string starting at: line 1 column 32 (char 31))"
        assert c.report.skipped.rows() == [(str(f), 1, reason)]
        assert c.conversations.height == 0


def test_jsonl_truncated_while_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "s1.jsonl"
    user = SESSION[0]
    lines = [
        json.dumps({**user, "uuid": f"u{i}", "message": {"content": f"prompt {i}"}})
        for i in range(20_000)
    ]
    f.write_text("\n".join(lines) + "\n")
    size = f.stat().st_size
    real_message = CorpusBuilder.message
    cut = size // 2 + 7  # somewhere inside a line

    def message_then_truncate(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if f.stat().st_size == size:
            os.truncate(f, cut)
        return real_message(self, *args, **kwargs)

    monkeypatch.setattr(CorpusBuilder, "message", message_then_truncate)
    with deadline():
        c = load(f)
    assert 0 < c.messages.height < 20_000  # what was read before the cut, no crash
    assert set(c.report.skipped["reason"].str.slice(0, 12)) <= {"invalid JSON"}
    assert c.report.skipped.height <= 1


def test_open_regular_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p")
    with deadline(), pytest.raises(LoadError, match=re.escape(f"p:0: {FIFO}")):
        open_regular(tmp_path / "p")
    with pytest.raises(LoadError, match=re.escape(f"/dev/zero:0: {CHAR}")):
        open_regular("/dev/zero")
    assert check(tmp_path) == "a directory"
    assert check(tmp_path / "nothing") == "no such file"


# -- the command: `convlab index` never blocks, never aborts on one odd file ---------------------


def _index(paths: list[Path], store: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "convlab.app.cli", "index", *map(str, paths)]
    cmd += ["--store", str(store), "--embedder", "hash", "--quiet", "--verbose"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, check=False)


def _skips(out: list[str]) -> tuple[str, Counter[str]]:
    """The skip report's head line and how often each reason is listed (``--verbose``)."""
    start = next(i for i, line in enumerate(out) if line.startswith("skipped: "))
    reasons: Counter[str] = Counter()
    for line in out[start + 1 :]:
        if not line.startswith("  "):
            break
        reasons[line.strip().split(": ", 1)[1]] += 1
    return out[start], reasons


def test_index_skips_and_reports_every_hazard(tmp_path: Path) -> None:
    d = tmp_path / "h"
    session(d)
    for kind in HAZARDS:
        make_hazard(d, kind)
    run = _index([d], tmp_path / "store")  # a hang: TimeoutExpired, the test fails
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    out = run.stdout.splitlines()
    assert out[0].startswith("1 conversations, 1 turns, ")
    head, reasons = _skips(out)
    assert head.startswith("skipped: 5 in ")
    assert reasons == {
        FIFO: 1,
        CHAR: 1,
        LOOP: 2,
        f"a dangling symlink (to {d}/nowhere.jsonl)": 1,
    }


@pytest.mark.parametrize("kind", sorted(HAZARDS))
def test_index_skips_one_hazard(tmp_path: Path, kind: str) -> None:
    d = tmp_path / "h"
    session(d)
    make_hazard(d, kind)
    run = _index([d], tmp_path / "store")  # a hang: TimeoutExpired, the test fails
    assert run.returncode == 0, run.stderr
    out = run.stdout.splitlines()
    assert out[0].startswith("1 conversations, 1 turns, ")
    n = len(HAZARDS[kind])
    head, reasons = _skips(out)
    assert head.startswith(f"skipped: {n} in ")
    reason = next(iter(HAZARDS[kind].values())).format(dir=d)
    assert reasons == {reason: n}


def test_index_of_a_fifo_given_as_the_path(tmp_path: Path) -> None:
    p = make_hazard(tmp_path, "fifo")
    run = _index([p], tmp_path / "store")
    # nothing readable was given: exit 2 with one line saying why, the skip listed as ever
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip().splitlines() == [
        f"convlab index: no readable transcript found under {p}: 1 x {FIFO} "
        "(--verbose lists each skipped file)"
    ]
    assert _skips(run.stdout.splitlines())[1] == {FIFO: 1}


INDEX_AS_NOBODY = """
import sys
from convlab.app.cli import main
sys.exit(main(["index", sys.argv[1], "--store", sys.argv[2], "--embedder", "hash", "-q", "-v"]))
"""


def test_index_of_an_unreadable_file_as_a_real_user(world_dir: Path) -> None:
    d = world_dir / "h"
    session(d)
    session(d, "s2.jsonl").chmod(0o000)
    d.chmod(0o755)
    for p in d.iterdir():
        if p.name != "s2.jsonl":
            p.chmod(0o644)
    run = _as_nobody(INDEX_AS_NOBODY, str(d), str(world_dir / "store"))
    assert run.returncode == 0, run.stderr
    out = run.stdout.splitlines()
    assert out[0].startswith("1 conversations, 1 turns, ")
    assert _skips(out)[1] == {"cannot read file (Permission denied)": 1}
