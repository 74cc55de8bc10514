"""The ``convlab`` command's entry point: the parser of every subcommand and the exit contract.

Exit codes, the same for every subcommand:

- 0: success;
- 1: no results (``search`` found nothing that matches);
- 2: a usage, input or data error: a bad option, a missing or damaged store, a store locked by
  another indexer, an unreadable transcript, a bad date. One line on stderr, ``convlab CMD: ...``;
- 3: an internal error (a bug): one line on stderr naming the file the full traceback was written
  to (``$XDG_CACHE_HOME/convlab/crash-*.txt``, else the system temp dir); ``--debug`` prints the
  traceback instead;
- 130: interrupted (Ctrl-C); 141: the reader of stdout went away (``convlab search ... | head -1``),
  the code a shell reports for a program stopped by SIGPIPE; nothing is printed.

Examples::

    convlab index ~/.claude/projects --store ~/.convlab/store
    convlab search "when did we fix the double fetch" --store ~/.convlab/store -k 5
    convlab search "nginx websockets" --since 2026-01-01 --role user --json
    convlab show SESSION_ID --turn 3 --budget 512 --store ~/.convlab/store
    convlab stats --store ~/.convlab/store
    convlab prune --store ~/.convlab/store --detached --dry-run
    convlab judge queries.jsonl --data ~/.claude/projects --qrels qrels.jsonl --assessor ana
    convlab judge agreement qrels-ana.jsonl qrels-bo.jsonl
    convlab mcp --store ~/.convlab/store
    convlab serve --store ~/.convlab/store --detach

``search`` goes to the store's ``convlab serve`` when one runs (:mod:`convlab.app.cli.client`),
before anything heavy is imported; the subcommands' modules are imported when the parser is
built, and only the named one's parser is built in full.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Protocol

from convlab.app.cli.client import via_server
from convlab.app.exits import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    is_input_error,
    one_line,
    write_crash_report,
)

__all__ = ["Command", "build_parser", "commands", "main"]


class Command(Protocol):
    """A subcommand: a module with a name, an example, ``add_parser`` and ``run``."""

    @property
    def NAME(self) -> str:
        """The subcommand's name."""
        ...

    @property
    def EXAMPLE(self) -> str | None:
        """One example command line for its ``--help``, or ``None``."""
        ...

    def add_parser(
        self, sub: argparse._SubParsersAction[argparse.ArgumentParser]
    ) -> argparse.ArgumentParser:
        """Add the subcommand's parser to ``sub`` and return it."""
        ...

    def run(self, args: argparse.Namespace) -> int:
        """Do the work; return the exit code (errors are raised, see the module docstring)."""
        ...


def commands() -> tuple[Command, ...]:
    """The subcommands, in the order ``convlab --help`` lists them (imported here: see above)."""
    from convlab.app.cli import eval as eval_command
    from convlab.app.cli import index, judge, mcp, prune, search, serve, show, stats

    return (index, search, show, stats, prune, eval_command, judge, mcp, serve)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``convlab`` parser; each subcommand's namespace carries its ``run`` as ``args.run``.

    Args:
        only: the subcommand a command line names: only its parser is built in full (its
            options, its registries' choices), the others by name alone. None: all in full,
            as ``convlab --help`` lists them.
    """
    from convlab._version import __version__
    from convlab.app.cli.options import add_common

    p = argparse.ArgumentParser(
        prog="convlab",
        description="Index coding-agent and chat histories, search them, measure retrieval.",
        epilog="exit codes: 0 success, 1 no results, 2 usage/input/data error, 3 internal error, "
        "130 interrupted",
    )
    p.add_argument("--version", action="version", version=f"convlab {__version__}")
    add_common(p, top=True)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in commands():
        if only not in (None, command.NAME):  # named, so never listed with its help
            sub.add_parser(command.NAME)
            continue
        sp = command.add_parser(sub)
        sp.set_defaults(run=command.run)
        sp.formatter_class = argparse.RawDescriptionHelpFormatter
        sp.epilog = f"example:\n  {command.EXAMPLE}" if command.EXAMPLE else None
        add_common(sp, top=False)
    return p


def main(argv: Sequence[str] | None = None, *, local: bool = False) -> int:
    """Entry point of the ``convlab`` command; returns the exit code (see the module docstring).

    ``local``: run here, never on a server (what a server itself runs).
    """
    command, debug = "", False
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        if not local:
            served = via_server(argv)
            if served is not None:
                return served
        parser = build_parser(only=next((a for a in argv if not a.startswith("-")), None))
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse printed usage or help (or --version)
            return EXIT_OK if exc.code in (0, None) else EXIT_USAGE
        command, debug = args.command, args.debug
        args.argv = ["convlab", *argv]  # the command line, for what records it (a run folder)
        args.main = main  # what `convlab serve` runs for each request
        code = int(args.run(args))
        sys.stdout.flush()  # a closed pipe shows up here, inside the handler of BrokenPipeError
        return code
    except BrokenPipeError:
        # Python's recipe (library/signal, "Note on SIGPIPE"): point stdout at devnull so the
        # flush at exit does not raise again, and leave without a word.
        devnull = os.open(os.devnull, os.O_WRONLY)
        with contextlib.suppress(OSError, ValueError):  # ValueError: a test's captured stdout
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"{'convlab ' + command if command else 'convlab'}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        return _internal_or_input(exc, command, debug=debug, argv=argv)


def _internal_or_input(
    exc: Exception, command: str, *, debug: bool, argv: Sequence[str] | None
) -> int:
    """One line and exit 2 for the user's error; for a bug a crash file (or, --debug, a trace)."""
    name = f"convlab {command}" if command else "convlab"
    if is_input_error(exc):
        print(f"{name}: {one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    if debug:
        traceback.print_exception(exc)
        print(f"{name}: internal error ({type(exc).__name__})", file=sys.stderr)
        return EXIT_INTERNAL
    where = write_crash_report(exc, argv)
    print(
        f"{name}: internal error ({one_line(exc, type_name=True)}); the traceback is in "
        f"{where} (--debug prints it)",
        file=sys.stderr,
    )
    return EXIT_INTERNAL
