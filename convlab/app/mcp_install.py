"""Claude Code's registration of the convlab MCP server, made with this interpreter's path.

Claude Code starts an MCP server by running its ``command``; a bare ``convlab`` is found only
when the virtual environment that installed it is on ``PATH``, which it is not for Claude
Code. The registration therefore names the interpreter that has convlab, by absolute path:
``/abs/python -m convlab mcp --store /abs/store``.

- Project scope: ``.mcp.json`` in the project's folder (Claude Code's project-scoped servers),
  ``{"mcpServers": {"convlab": {"type": "stdio", "command": ..., "args": [...]}}}``; the other
  servers and keys already there are kept (:func:`project_config`).
- User scope: the ``claude mcp add --scope user ...`` line that registers it for every project
  (:func:`claude_add_line`); Claude Code's own command writes its settings.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from convlab.files import CONFIG, read_text_regular

__all__ = ["SERVER_NAME", "claude_add_line", "project_config", "server_command"]

SERVER_NAME = "convlab"
"""The name the server is registered under."""


def server_command(store: str | Path, python: str | None = None) -> list[str]:
    """The command that serves ``store``: the interpreter (absolute), ``-m convlab mcp``.

    Example:
        >>> server_command("/s", python="/venv/bin/python")
        ['/venv/bin/python', '-m', 'convlab', 'mcp', '--store', '/s']
    """
    exe = python or sys.executable
    return [exe, "-m", "convlab", "mcp", "--store", str(Path(store).expanduser().absolute())]


def project_config(mcp_json: Path, store: str | Path, python: str | None = None) -> dict[str, Any]:
    """``mcp_json``'s content with the convlab server registered (the file is not written).

    Raises:
        ValueError: the file is there but is not a JSON object with an object ``mcpServers``,
            naming the file (it is never overwritten then).
    """
    config: dict[str, Any] = {}
    if mcp_json.exists():
        try:
            config = json.loads(read_text_regular(mcp_json, limit=CONFIG) or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{mcp_json}:{exc.lineno}: not JSON ({exc.msg}); fix it first"
            ) from None
        if not isinstance(config, dict) or not isinstance(config.get("mcpServers", {}), dict):
            raise ValueError(f"{mcp_json}: expected a JSON object whose mcpServers is an object")
    command = server_command(store, python)
    servers = dict(config.get("mcpServers", {}))
    servers[SERVER_NAME] = {"type": "stdio", "command": command[0], "args": command[1:]}
    return {**config, "mcpServers": servers}


def claude_add_line(store: str | Path, python: str | None = None, scope: str = "user") -> str:
    """The ``claude mcp add`` command line that registers the server in ``scope``.

    Example:
        >>> claude_add_line("/s", python="/v/python")
        'claude mcp add --scope user convlab -- /v/python -m convlab mcp --store /s'
    """
    return shlex.join(
        [
            "claude",
            "mcp",
            "add",
            "--scope",
            scope,
            SERVER_NAME,
            "--",
            *server_command(store, python),
        ]
    )
