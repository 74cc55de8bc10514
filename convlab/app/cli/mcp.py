"""``convlab mcp``: serve a store to agents over the Model Context Protocol (stdio)."""

from __future__ import annotations

import argparse
import os

from convlab.app.cli.options import add_store
from convlab.app.exits import EXIT_OK, UsageError

NAME = "mcp"
EXAMPLE = "convlab mcp --store ~/.convlab/store"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``mcp`` to the subcommands ``sub``."""
    sp: argparse.ArgumentParser = sub.add_parser(
        NAME,
        help="serve the store to agents over MCP (stdio): search, show and context tools",
        description="Run a Model Context Protocol server on stdin/stdout with three tools: "
        "search (query, k, filters), show (a hit and the docs around it) and context (prompt-"
        "ready text for a query within a token budget). Needs convlab-memory[mcp].",
    )
    add_store(sp)
    return sp


def run(args: argparse.Namespace) -> int:
    """Serve ``args.store`` until the client closes stdin."""
    from convlab.app.cli.mcp_server import build_server
    from convlab.app.cli.serve import start_background
    from convlab.store import Store

    if not Store(args.store).exists():
        raise UsageError(
            f"no index at {args.store}; build one with `convlab index PATH --store {args.store}`"
        )
    try:
        server = build_server(args.store)
    except ImportError as exc:  # the extra is missing: one line naming it
        raise UsageError(str(exc)) from None
    warm = start_background(args.store, owner=os.getpid())  # `convlab search` answers at once
    try:
        server.run()
    finally:
        if warm is not None:
            warm.terminate()
    return EXIT_OK
