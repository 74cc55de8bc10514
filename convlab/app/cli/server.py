"""The search server behind ``convlab serve``: one store's searches, warm, over a Unix socket.

Each request is a ``convlab search`` command line (see :mod:`convlab.app.cli.client` for the
protocol), run by the ``convlab`` entry point itself with the client's stdout and stderr, its
working folder, terminal width and the variables a search reads, under
:func:`convlab.app.cli.warm.keeping`: the output and exit code are those of the same search run
in the client's process, and the store, its indexes and the model stay loaded between requests.
Requests run one at a time. Only a client of the same user (the folder is the user's, mode
0700; the socket 0600; on Linux the peer's uid is checked too) running the same convlab code is
served; anything else is refused and the client searches itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from convlab.app.cli.client import ENV_PASSED, MAX_REQUEST, call, socket_path
from convlab.app.cli.warm import Warm, keeping
from convlab.app.exits import EXIT_INTERNAL, EXIT_OK, UsageError

__all__ = ["REQUEST_TIMEOUT", "SearchServer"]

REQUEST_TIMEOUT = 10.0
"""Seconds a client has to send its request (a stuck client holds no server for long)."""
POLL = 1.0
"""Seconds between the server's checks of its idle time and its owner."""
_ENV = (*ENV_PASSED, "COLUMNS")


class SearchServer:
    """One store's search server (a class: it holds the socket and what is kept warm).

    Args:
        store: the store folder whose searches it serves.
        handle: the ``convlab`` entry point, ``main(argv) -> exit code``.
        idle: seconds without a request after which it stops (None: never).
        owner: a process id; the server stops when that process is gone (None: no owner).
    """

    def __init__(
        self,
        store: Path,
        handle: Callable[[Sequence[str]], int],
        *,
        idle: float | None = None,
        owner: int | None = None,
    ) -> None:
        self.store = store
        self.handle = handle
        self.idle = idle
        self.owner = owner
        self.warm = Warm()
        self.path = socket_path(store, create=True)
        self._sock: socket.socket | None = None
        self._inode: int | None = None
        self._stop = False
        self.served = 0
        """Requests run so far (the warm-up not counted)."""

    def bind(self) -> Path:
        """Listen on the store's socket; a stale socket (no server behind it) is replaced.

        Raises:
            UsageError: a server already listens there, or the path is not a socket.
        """
        if self.path.exists() or self.path.is_symlink():
            try:
                call(self.path, {"op": "ping"}, timeout=REQUEST_TIMEOUT)
            except (ConnectionRefusedError, FileNotFoundError):
                if not self.path.is_socket():
                    raise UsageError(f"{self.path} is not a socket; remove it") from None
                self.path.unlink(missing_ok=True)  # stale: its server is gone
            except (OSError, ValueError):  # a server there, busy or not ours: leave it be
                raise UsageError(f"a server already serves {self.store} ({self.path})") from None
            else:
                raise UsageError(f"a server already serves {self.store} ({self.path})")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket is made 0600
        try:
            sock.bind(os.fspath(self.path))
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        sock.listen(16)
        sock.settimeout(POLL)
        self._sock, self._inode = sock, self.path.stat().st_ino
        return self.path

    def warm_up(self) -> int:
        """One search run as a client's would be, its output dropped: everything loaded now."""
        with open(os.devnull, "w") as out, open(os.devnull, "w") as err:
            argv = ["search", "--store", os.fspath(self.store), "-k", "1", "warm up"]
            env = {k: os.environ[k] for k in _ENV if k in os.environ}
            return self._run(argv, os.getcwd(), env, (os.dup(out.fileno()), os.dup(err.fileno())))

    def serve(self) -> None:
        """Answer requests until stopped, idle for ``idle`` seconds, or the owner is gone."""
        if self._sock is None:
            raise RuntimeError("bind() first")
        last = time.monotonic()
        while not self._stop and not self._owner_gone():
            if self.idle is not None and time.monotonic() - last > self.idle:
                return
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            with conn:
                self._answer(conn)
            last = time.monotonic()

    def close(self) -> None:
        """Stop listening; remove the socket if it is still this server's."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        with contextlib.suppress(OSError):
            if self.path.stat().st_ino == self._inode:
                self.path.unlink()

    def _owner_gone(self) -> bool:
        if self.owner is None:
            return False
        try:
            os.kill(self.owner, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # alive, another user's: a reused pid is not our owner
            return True
        return False

    def _answer(self, conn: socket.socket) -> None:
        """Read one request from ``conn``, run it, answer; the fds it carried are closed."""
        conn.settimeout(REQUEST_TIMEOUT)
        fds: list[int] = []
        try:
            _check_peer(conn)
            request, fds = _read_request(conn)
            answer = self._do(request, fds)
            fds = []  # _do took them over
        except (ValueError, OSError) as exc:
            answer = {"refused": str(exc)[:200]}
        finally:
            for fd in fds:
                os.close(fd)
        with contextlib.suppress(OSError):
            conn.sendall((json.dumps(answer) + "\n").encode())

    def _do(self, request: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        op = request.get("op")
        if op in ("ping", "stop"):
            self._stop = op == "stop"
            for fd in fds:
                os.close(fd)
            return {"code": EXIT_OK, "served": self.served}
        if op != "run":
            raise ValueError(f"unknown op {op!r}")
        argv, cwd, env = request.get("argv"), request.get("cwd"), request.get("env")
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
            raise ValueError("argv must be a list of strings")
        if argv[0] != "search":
            raise ValueError("only search is served")
        if not isinstance(cwd, str) or not isinstance(env, dict):
            raise ValueError("cwd and env are required")
        env = {k: v for k, v in env.items() if k in _ENV and isinstance(v, str)}
        mine = {"package": str(Path(__file__).resolve().parents[2])}
        from convlab._version import __version__

        if request.get("package") != mine["package"] or request.get("version") != __version__:
            raise ValueError("another convlab")
        if len(fds) != 2:
            raise ValueError("stdout and stderr must come with the request")
        self.served += 1
        return {"code": self._run(argv, cwd, env, (fds[0], fds[1]))}

    def _run(self, argv: list[str], cwd: str, env: dict[str, str], fds: tuple[int, int]) -> int:
        """``handle(argv)`` writing to ``fds``, in ``cwd`` with ``env``; the exit code."""
        with _streams(fds) as (out, err), _client(cwd, env), keeping(self.warm):
            saved = sys.stdout, sys.stderr
            sys.stdout, sys.stderr = out, err
            try:
                return int(self.handle(argv))
            except Exception as exc:  # the entry point keeps its contract; this is a last guard
                print(f"convlab search: internal error in the server ({exc!r})", file=err)
                return EXIT_INTERNAL
            finally:
                with contextlib.suppress(OSError, ValueError):
                    out.flush()
                sys.stdout, sys.stderr = saved


def _read_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """One JSON line and the fds on its first bytes (at most two).

    Raises:
        ValueError: no request, one over :data:`MAX_REQUEST` bytes, or not a JSON object.
    """
    data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 2)
    try:
        while b"\n" not in data:
            if len(data) > MAX_REQUEST:
                raise ValueError(f"a request over {MAX_REQUEST} bytes")
            part = conn.recv(65536)
            if not part:
                raise ValueError("the request ended before its newline")
            data += part
        line = data.split(b"\n", 1)[0]
        if len(line) > MAX_REQUEST:
            raise ValueError(f"a request over {MAX_REQUEST} bytes")
        request = json.loads(line)
        if not isinstance(request, dict):
            raise ValueError("a request is a JSON object")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return request, list(fds)


def _check_peer(conn: socket.socket) -> None:
    """Refuse a peer of another user (Linux's ``SO_PEERCRED``; elsewhere the folder's mode)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, 12))
    if uid != os.getuid():
        raise ValueError("another user's client")


@contextlib.contextmanager
def _streams(fds: tuple[int, int]) -> Iterator[tuple[IO[str], IO[str]]]:
    """The client's stdout and stderr as text files, buffered as this process's own would be."""
    like = sys.__stdout__
    encoding = like.encoding if like is not None else "utf-8"
    errors = like.errors if like is not None else "strict"
    out = os.fdopen(fds[0], "w", encoding=encoding, errors=errors)
    err = os.fdopen(fds[1], "w", encoding=encoding, errors="backslashreplace", buffering=1)
    if out.isatty():
        out.reconfigure(line_buffering=True)
    try:
        yield out, err
    finally:
        for f in (out, err):
            with contextlib.suppress(OSError, ValueError):
                f.close()


@contextlib.contextmanager
def _client(cwd: str, env: dict[str, str]) -> Iterator[None]:
    """The client's working folder and variables, for the length of one request."""
    here = os.getcwd()
    saved = {k: os.environ.get(k) for k in _ENV}
    try:
        os.chdir(cwd)
        for k in _ENV:
            if k in env:
                os.environ[k] = env[k]
            else:
                os.environ.pop(k, None)
        yield
    finally:
        os.chdir(here)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
