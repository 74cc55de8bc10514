"""`convlab serve`: searches handed to a warm server print what a search in-process prints."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from convlab.app.cli import main
from convlab.app.cli.client import MAX_REQUEST, Refused, call, named_store, socket_path
from convlab.app.cli.server import SearchServer
from convlab.app.exits import EXIT_OK, EXIT_USAGE, UsageError
from convlab.paths import sample_data_path

REPO = Path(__file__).resolve().parents[2]
WAIT_S = 240.0  # a bound on a server's start, never a timing assertion


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample indexed with the hash embedder."""
    out = tmp_path_factory.mktemp("serve") / "store"
    src = sample_data_path() / "transcripts"
    assert main(["index", str(src), "--store", str(out), "--embedder", "hash", "-q"]) == EXIT_OK
    return out


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A runtime folder of this test's own, where servers put their sockets."""
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    return folder


def _env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, **extra}


def _convlab(*argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "convlab", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, env=_env(**extra), timeout=WAIT_S)


def _served(store: Path) -> int:
    """Searches the store's server has run (it answers a ping with the count)."""
    return call(socket_path(store), {"op": "ping"}, timeout=WAIT_S)["served"]


@pytest.fixture
def server(store: Path, runtime: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``convlab serve`` for the store, in a process of its own, stopped after the test."""
    cmd = [sys.executable, "-m", "convlab", "serve", "--store", str(store), "-q"]
    proc = subprocess.Popen(cmd, env=_env(), stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            _served(store)
            break
        except (OSError, Refused):
            assert proc.poll() is None, "the server ended before it answered"
            assert time.monotonic() < deadline, "the server did not answer"
            time.sleep(0.2)
    yield proc
    if proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=WAIT_S)


def test_a_search_through_the_server_prints_what_a_search_here_prints(
    store: Path, server: subprocess.Popen[bytes]
) -> None:
    q, s = "IndexHNSWFlat efConstruction", str(store)
    cases = [
        ["search", q, "--store", s, "-k", "2"],
        ["search", q, "--store", s, "-k", "2", "--json"],
        ["search", q, "--store", s, "--budget", "60"],
        ["search", q, "--store", s, "--since", "2999-01-01"],  # no results: exit 1
        ["search", q, "--store", s, "-k", "0"],  # a usage error: exit 2
        ["search", "--store", s],  # argparse's own error
    ]
    for argv in cases:
        before = _served(store)
        there = _convlab(*argv)
        assert _served(store) == before + 1, argv  # the server ran it
        here = _convlab(*argv, CONVLAB_SERVER="off")
        assert (there.returncode, there.stdout, there.stderr) == (
            here.returncode,
            here.stdout,
            here.stderr,
        ), argv
    codes = [_convlab(*argv).returncode for argv in cases]
    assert codes == [0, 0, 0, 1, 2, 2]
    assert "IndexHNSWFlat" in _convlab(*cases[0]).stdout


def test_serve_stop_ends_the_server_and_removes_its_socket(
    store: Path, server: subprocess.Popen[bytes]
) -> None:
    assert _convlab("serve", "--status", "--store", str(store)).returncode == 0
    assert _convlab("serve", "--stop", "--store", str(store)).returncode == 0
    assert server.wait(timeout=WAIT_S) == 0
    assert not socket_path(store).exists()
    assert _convlab("serve", "--status", "--store", str(store)).returncode == 1
    # with no server the search runs here, and still finds the answer
    found = _convlab("search", "IndexHNSWFlat", "--store", str(store), "-k", "1")
    assert found.returncode == 0
    assert "IndexHNSWFlat" in found.stdout


def _in_thread(server: SearchServer) -> threading.Thread:
    server.bind()
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    return thread


def test_a_stale_socket_is_replaced_and_a_live_server_is_left_alone(
    store: Path, runtime: Path
) -> None:
    path = socket_path(store, create=True)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays, nothing listens: what a killed server leaves
    first = SearchServer(store, lambda argv: 0)
    thread = _in_thread(first)
    assert path.is_socket()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    with pytest.raises(UsageError, match="already serves"):
        SearchServer(store, lambda argv: 0).bind()
    assert call(path, {"op": "stop"}, timeout=WAIT_S)["code"] == 0
    thread.join(timeout=WAIT_S)
    assert not thread.is_alive()
    first.close()
    assert not path.exists()


def test_the_server_refuses_what_it_must_not_run(store: Path, runtime: Path) -> None:
    ran: list[list[str]] = []

    def handle(argv: Sequence[str]) -> int:
        ran.append(list(argv))
        return 0

    server = SearchServer(store, handle)
    thread = _in_thread(server)
    path = socket_path(store)
    with open(os.devnull, "w") as out:
        fds = (out.fileno(), out.fileno())
        good = {"op": "run", "cwd": os.getcwd(), "env": {}, **_identity()}
        for request in (
            {**good, "argv": ["index", "/"]},  # only search is served
            {**good, "argv": ["search", "x"], "version": "0.0.0"},  # another convlab
            {**good, "argv": ["search", "x"], "package": "/elsewhere"},
            {**good, "argv": "search x"},
            {"op": "format"},
        ):
            with pytest.raises(Refused):
                call(path, request, fds=fds, timeout=WAIT_S)
        with pytest.raises(Refused):  # no stdout and stderr came with it
            call(path, {**good, "argv": ["search", "x"]}, timeout=WAIT_S)
        with pytest.raises(Refused, match="over"):
            call(path, {**good, "argv": ["search", "x" * MAX_REQUEST]}, fds=fds, timeout=WAIT_S)
    assert ran == []
    call(path, {"op": "stop"}, timeout=WAIT_S)
    thread.join(timeout=WAIT_S)
    server.close()


def _identity() -> dict[str, str]:
    from convlab.app.cli.client import _identity as identity

    return identity()


def test_the_next_search_reads_a_version_indexed_while_the_server_runs(
    tmp_path: Path, runtime: Path
) -> None:
    src = sample_data_path() / "transcripts"
    extra = tmp_path / "extra"
    extra.mkdir()
    s = tmp_path / "store"
    index = ["index", str(src), str(extra), "--store", str(s), "--embedder", "hash", "-q"]
    assert _convlab(*index).returncode == 0
    server = SearchServer(s, lambda argv: main(argv, local=True))
    thread = _in_thread(server)
    try:
        word = "zanzibarquux"
        query = ["search", word, "--store", str(s), "--lexical", "--json"]
        assert _convlab(*query).returncode == 1  # nothing has the word yet
        chat = [{"id": "new", "conversations": [{"from": "human", "value": f"a {word} note"}]}]
        (extra / "new.json").write_text(json.dumps(chat))
        assert _convlab(*index).returncode == 0
        found = _convlab(*query)
        assert found.returncode == 0
        assert word in found.stdout
        assert _served(s) == 2
    finally:
        call(socket_path(s), {"op": "stop"}, timeout=WAIT_S)
        thread.join(timeout=WAIT_S)
        server.close()


def test_the_store_a_command_line_names() -> None:
    assert named_store(["search", "q", "--store", "a"]) == "a"
    assert named_store(["search", "q", "--store=b"]) == "b"
    assert named_store(["search", "--", "--store", "c"]) == "~/.convlab/store"
    assert main(["serve", "--store", "/nonexistent/convlab-store"]) == EXIT_USAGE
