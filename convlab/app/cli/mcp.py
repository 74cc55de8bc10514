"""``convlab mcp``: serve a store to agents over the Model Context Protocol (stdio).

``convlab mcp install`` registers that server with Claude Code, naming this interpreter by
absolute path (:mod:`convlab.app.mcp_install`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
from pathlib import Path

from convlab.app.cli.options import add_store
from convlab.app.exits import EXIT_OK, UsageError

NAME = "mcp"
EXAMPLE = "convlab mcp install --scope project --store ~/.convlab/store"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``mcp`` to the subcommands ``sub``."""
    sp: argparse.ArgumentParser = sub.add_parser(
        NAME,
        help="serve the store to agents over MCP (stdio), or register it with Claude Code",
        description="Run a Model Context Protocol server on stdin/stdout with three tools: "
        "search (query, k, filters), show (a hit and the docs around it) and context (prompt-"
        "ready text for a query within a token budget). `convlab mcp install` registers it "
        "with Claude Code, run by this Python. Needs convlab-memory[mcp].",
    )
    sp.add_argument(
        "action",
        nargs="?",
        choices=("serve", "install"),
        default="serve",
        help="serve (the default) or install: register the server with Claude Code",
    )
    add_store(sp)
    sp.add_argument(
        "--scope",
        choices=("project", "user"),
        default="project",
        help="install: project writes .mcp.json in --dir; user prints the `claude mcp add "
        "--scope user` line to run (%(default)s)",
    )
    sp.add_argument(
        "--dir",
        type=Path,
        default=Path("."),
        help="install --scope project: the project folder whose .mcp.json is written (.)",
    )
    return sp


def run(args: argparse.Namespace) -> int:
    """Serve ``args.store`` until the client closes stdin, or register it (``install``)."""
    from convlab.app.cli.serve import start_background
    from convlab.store import Store

    if not Store(args.store).exists():
        raise UsageError(
            f"no index at {args.store}; build one with `convlab index PATH --store {args.store}`"
        )
    if args.action == "install":
        return install(args)
    from convlab.app.cli.mcp_server import build_server

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


def install(args: argparse.Namespace) -> int:
    """Register the server: write ``.mcp.json`` (project) or print the ``claude`` line (user).

    Raises:
        UsageError: the ``mcp`` SDK is not installed for this interpreter, or an
            ``.mcp.json`` that is not a JSON object.
    """
    from convlab.app.exits import write_atomic
    from convlab.app.mcp_install import claude_add_line, project_config

    if importlib.util.find_spec("mcp") is None:
        raise UsageError(
            "this Python has no MCP SDK: pip install 'convlab-memory[mcp]' before installing"
        )
    if args.scope == "user":
        print(claude_add_line(args.store))
        print("# run the line above: Claude Code then starts the server in every project")
        return EXIT_OK
    target = args.dir.expanduser() / ".mcp.json"
    try:
        config = project_config(target, args.store)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    write_atomic(target, json.dumps(config, indent=2) + "\n", mode=0o644)
    server = config["mcpServers"]["convlab"]
    print(f"wrote {target}: {server['command']} {' '.join(server['args'])}")
    return EXIT_OK
