"""``convlab serve``: keep a store's search warm, so that ``convlab search`` answers at once.

``convlab search`` run as a new process spends seconds on imports and loading before a search
of milliseconds; while ``convlab serve`` runs for its store, the command line hands the search
to it (:mod:`convlab.app.cli.client`) and prints the same output with the same exit code. It
runs in the foreground until interrupted, ``--idle`` minutes without a search, or ``convlab
serve --stop``; ``--detach`` starts it in the background and returns once it answers.
``convlab mcp`` and ``convlab index --watch`` start one for their store while they run
(:func:`start_background`).
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from convlab.app.cli.client import Refused, call, socket_path
from convlab.app.cli.options import add_store
from convlab.app.exits import EXIT_NO_RESULTS, EXIT_OK, UsageError

__all__ = ["EXAMPLE", "NAME", "add_parser", "run", "start_background"]

NAME = "serve"
EXAMPLE = "convlab serve --store ~/.convlab/store --detach --idle 60"
READY_S = 300.0
"""Seconds ``--detach`` waits for the server to answer (it loads the store and the model)."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``serve`` to the subcommands ``sub``."""
    sp: argparse.ArgumentParser = sub.add_parser(
        NAME,
        help="keep a store's search warm: `convlab search` then answers at once",
        description="Serve a store's searches on a Unix socket of this user's alone "
        "($XDG_RUNTIME_DIR/convlab, else the temp dir's convlab-UID): while it runs, "
        "`convlab search` on that store runs here, with the same output and exit codes, the "
        "store and the model loaded once. A new version written by `convlab index` is loaded "
        "by the next search.",
    )
    add_store(sp)
    sp.add_argument(
        "--idle",
        type=float,
        default=None,
        metavar="MINUTES",
        help="stop after this many minutes without a search (default: never)",
    )
    what = sp.add_mutually_exclusive_group()
    what.add_argument(
        "--detach", action="store_true", help="run in the background; return once it answers"
    )
    what.add_argument("--stop", action="store_true", help="stop the store's server (exit 1: none)")
    what.add_argument(
        "--status", action="store_true", help="whether a server runs (exit 0) or not (exit 1)"
    )
    sp.add_argument("--owner-pid", type=int, default=None, help=argparse.SUPPRESS)
    return sp


def run(args: argparse.Namespace) -> int:
    """Serve ``args.store`` (or detach, stop, report: see the options)."""
    from convlab.store import Store

    if args.idle is not None and args.idle <= 0:
        raise UsageError("--idle must be positive")
    if args.stop or args.status:
        answered = _ask(args.store, "stop" if args.stop else "ping")
        print(
            f"convlab serve: {'a' if answered else 'no'} server for {args.store}"
            f"{' stopped' if answered and args.stop else ''}",
            file=sys.stderr,
        )
        return EXIT_OK if answered else EXIT_NO_RESULTS
    if not Store(args.store).exists():
        raise UsageError(
            f"no index at {args.store}; build one with `convlab index PATH --store {args.store}`"
        )
    if args.detach:
        child = start_background(args.store, idle=args.idle, wait=READY_S)
        if child is None:
            raise UsageError(f"a server already serves {args.store}")
        print(f"convlab serve: serving {args.store} (pid {child.pid})", file=sys.stderr)
        return EXIT_OK
    return _serve(args)


def _serve(args: argparse.Namespace) -> int:
    """The server in this process, until interrupted, stopped or idle."""
    from convlab.app.cli.server import SearchServer

    server = SearchServer(
        Path(args.store),
        functools.partial(args.main, local=True),  # the entry point, run here
        idle=args.idle * 60 if args.idle is not None else None,
        owner=args.owner_pid,
    )

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt  # leave serve() through close(): the socket is removed

    signal.signal(signal.SIGTERM, stop)
    path = server.bind()
    try:
        if not args.quiet:
            print(f"convlab serve: loading {args.store}", file=sys.stderr, flush=True)
        server.warm_up()
        if not args.quiet:
            print(f"convlab serve: serving {args.store} on {path}", file=sys.stderr, flush=True)
        server.serve()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return EXIT_OK


def _ask(store: str | Path, op: str) -> bool:
    """Send ``op`` (ping, stop) to the store's server; whether one answered."""
    try:
        call(socket_path(store), {"op": op}, timeout=10.0)
    except (Refused, OSError, ValueError):
        return False
    return True


def start_background(
    store: str | Path,
    *,
    owner: int | None = None,
    idle: float | None = None,
    wait: float = 0.0,
) -> subprocess.Popen[bytes] | None:
    """Start ``convlab serve`` for ``store`` in a process of its own; None if one runs already.

    Args:
        store: the store folder.
        owner: the process whose end stops the server (``convlab mcp``, ``index --watch``).
        idle: minutes without a search before it stops.
        wait: seconds to wait until it answers (0: return at once).
    """
    if _ask(store, "ping"):
        return None
    cmd = [sys.executable, "-m", "convlab", "serve", "--store", os.fspath(store), "-q"]
    cmd += ["--owner-pid", str(owner)] if owner is not None else []
    cmd += ["--idle", str(idle)] if idle is not None else []
    child = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # not stopped with the terminal's Ctrl-C: its owner stops it
    )
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and child.poll() is None and not _ask(store, "ping"):
        time.sleep(0.2)
    return child
