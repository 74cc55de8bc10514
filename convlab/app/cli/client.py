"""The command line's side of ``convlab serve``: hand ``convlab search`` to a warm server.

A search run as a new process spends seconds importing and loading (polars, FAISS, bm25s, the
model) before a search that takes milliseconds. When ``convlab serve`` runs for the store a
search names, :func:`via_server` sends it the command line over the server's Unix socket
together with the process's stdout and stderr (``SCM_RIGHTS``, :func:`socket.send_fds`); the
server runs the very same ``convlab`` entry point writing to them, and answers the exit code.
The output and exit codes are those of a search in this process. With no server (or another
convlab's, or ``CONVLAB_SERVER=off``) the caller searches in-process.

This module imports only the standard library: it runs before anything heavy is imported.

The protocol, one request per connection, each side one JSON line:

- request: ``{"op": "run", "argv": [...], "cwd": ..., "env": {...}, "package": ...,
  "version": ...}`` (the two file descriptors ride on its first bytes), or ``{"op": "ping"}``
  or ``{"op": "stop"}``; at most :data:`MAX_REQUEST` bytes;
- answer: ``{"code": N}``, or ``{"refused": "why"}`` (then the caller searches itself).

Where the socket is: ``$XDG_RUNTIME_DIR/convlab/``, else ``{tempdir}/convlab-{uid}/`` (the rule
tmux follows), a folder of the user's alone (mode 0700, checked), named by a hash of the store's
resolved path.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import socket
import stat
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "ENV_PASSED",
    "MAX_REQUEST",
    "Refused",
    "call",
    "named_store",
    "runtime_dir",
    "socket_path",
    "via_server",
]

MAX_REQUEST = 1 << 20
"""The largest request a server reads (bytes): a command line and its environment fit."""
MAX_ANSWER = 1 << 12
"""The largest answer a client reads (bytes)."""
ENV_PASSED = (
    "HOME",
    "NO_COLOR",
    "TZ",
    "XDG_CACHE_HOME",
    "CODEX_HOME",
    "CONVLAB_CACHE",
    "CONVLAB_DATA",
    "CONVLAB_SHARED",
)
"""The variables a search reads, passed to the server with the command line (and the width)."""
DEFAULT_STORE = "~/.convlab/store"
"""The store a search names without ``--store`` (``options.DEFAULT_STORE``, not imported)."""


class Refused(Exception):
    """The server would not run the request (another convlab, a malformed request)."""


def runtime_dir(*, create: bool = False) -> Path:
    """The user's folder for server sockets, checked to be a folder of the user's alone.

    Raises:
        OSError: the folder is not a real directory owned by this user with mode 0700.
    """
    base = os.environ.get("XDG_RUNTIME_DIR")
    folder = (
        Path(base) / "convlab" if base else Path(tempfile.gettempdir()) / f"convlab-{os.getuid()}"
    )
    if create:
        folder.mkdir(mode=0o700, parents=bool(base), exist_ok=True)
    st = folder.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise OSError(errno.EPERM, f"{folder} is not a folder of this user's alone (mode 0700)")
    return folder


def socket_path(store: str | Path, *, create: bool = False) -> Path:
    """Where the server of ``store`` listens (its resolved path hashed into a short name)."""
    resolved = os.path.realpath(os.path.expanduser(os.fspath(store)))
    name = hashlib.sha256(os.fsencode(resolved)).hexdigest()[:24]
    return runtime_dir(create=create) / f"{name}.sock"


def named_store(argv: Sequence[str]) -> str:
    """The store a command line names (``--store DIR`` or ``--store=DIR``; else the default).

    A cheap reading, before the parser exists: the server parses the command line itself, so a
    store named otherwise only means that this store's server answers for it.
    """
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--store" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--store="):
            return arg.split("=", 1)[1]
    return DEFAULT_STORE


def via_server(argv: Sequence[str]) -> int | None:
    """Run ``convlab search ...`` on the store's server; None when there is none to run it.

    Only ``search`` goes to a server, and only when ``CONVLAB_SERVER`` is not ``off``. A server
    that dies before answering leaves one line on stderr and exit 3 (its output may be partial).
    """
    if not argv or argv[0] != "search" or os.environ.get("CONVLAB_SERVER") == "off":
        return None
    if not hasattr(socket, "AF_UNIX") or not hasattr(socket, "send_fds"):
        return None
    try:
        path = socket_path(named_store(argv))
    except (OSError, ValueError):
        return None
    if not path.exists():
        return None
    env = {k: os.environ[k] for k in (*ENV_PASSED, "COLUMNS") if k in os.environ}
    if "COLUMNS" not in env:  # the terminal's width, where there is one (else each its default)
        with contextlib.suppress(AttributeError, ValueError, OSError):
            env["COLUMNS"] = str(os.get_terminal_size(sys.__stdout__.fileno()).columns)  # type: ignore[union-attr]
    request = {
        "op": "run",
        "argv": list(argv),
        "cwd": os.getcwd(),
        "env": env,
        **_identity(),
    }
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        answer = call(path, request, fds=(sys.stdout.fileno(), sys.stderr.fileno()))
    except (Refused, ConnectionRefusedError, FileNotFoundError):
        return None  # no live server (a stale socket), or not ours to use: search here
    except (OSError, ValueError) as exc:
        print(f"convlab search: the search server failed ({exc})", file=sys.stderr)
        return 3
    return int(answer["code"])


def _identity() -> dict[str, str]:
    """The package this client runs (a server runs only requests of the same code)."""
    from convlab._version import __version__

    return {"package": str(Path(__file__).resolve().parents[2]), "version": __version__}


def call(
    path: Path,
    request: Mapping[str, object],
    *,
    fds: Sequence[int] = (),
    timeout: float | None = None,
) -> dict[str, int]:
    """Send one request to the server at ``path``; its answer.

    Raises:
        Refused: the server refused the request.
        ConnectionRefusedError, FileNotFoundError: no server listens there.
        OSError: the socket is not this user's, or the server ended without an answer.
    """
    st = path.lstat()
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        raise Refused(f"{path} is not a socket of this user's")
    data = (json.dumps(request) + "\n").encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(os.fspath(path))
        sent = socket.send_fds(sock, [data], list(fds)) if fds else sock.send(data)
        if sent < len(data):
            sock.sendall(data[sent:])
        answer = _read_line(sock, MAX_ANSWER)
    if not answer:
        raise OSError(errno.ECONNRESET, "it ended without an answer")
    decoded = json.loads(answer)
    if not isinstance(decoded, dict):
        raise ValueError("an answer is a JSON object")
    if "refused" in decoded:
        raise Refused(str(decoded["refused"]))
    return {k: int(v) for k, v in decoded.items()}


def _read_line(sock: socket.socket, limit: int) -> bytes:
    """Bytes up to the first newline (without it), at most ``limit``; b"" if none came."""
    buf = b""
    while b"\n" not in buf:
        part = sock.recv(4096)
        if not part:
            return b""
        buf += part
        if len(buf) > limit:
            raise ValueError(f"an answer over {limit} bytes")
    return buf.split(b"\n", 1)[0]
