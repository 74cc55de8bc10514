"""The ``convlab`` command: index real histories, search them, show a turn, stats, eval, judge.

One module per subcommand (``index``, ``search``, ``show``, ``stats``, ``eval``, ``judge``), each
with ``add_parser(sub)`` and ``run(args)``; :mod:`convlab.app.cli.options` holds the options they
share and :mod:`convlab.app.cli.main` assembles the parser and keeps the exit-code contract
(:mod:`convlab.app.exits`). Run it as ``convlab``, ``python -m convlab`` or
``python -m convlab.app.cli``.
"""

from __future__ import annotations

from convlab.app.cli.main import main

__all__ = ["main"]
