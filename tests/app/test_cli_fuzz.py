"""A fuzzer over the command line: any options, any values, exit 0, 1 or 2, never 3.

The options and their choices are read from the ``convlab`` parser itself
(:func:`convlab.app.cli.main.build_parser`), so a new option is fuzzed the day it is added.
Values are drawn from what a hostile or careless user types: devices, a FIFO, an empty folder,
a file that is not what the option wants, numbers past every range, dates past the calendar,
non-UTF-8 names, and arbitrary text. Every example runs in-process (``main(argv)``) against
a small store built once; ``index`` writes a fresh store of a one-file history.

Left out: ``mcp`` (a server that waits for a client), ``index --watch`` (a loop), ``eval`` (a
whole comparison per example: its refusals are tested in ``test_cli_exit_cases.py``), and
``judge``'s interactive pooling (only ``judge agreement`` is fuzzed).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from convlab.app.cli import main
from convlab.app.cli.main import build_parser
from convlab.paths import sample_data_path

LEFT_OUT_COMMANDS = {"mcp", "eval", "serve"}  # serve: a server process
LEFT_OUT_OPTIONS = {"--watch", "--interval", "--watch-cycles", "--help", "--version"}
NUMBERS = ["0", "-1", "1", "3", str(2**70), "-" + str(2**70), "1e400", "nan", "inf", "1.5", ""]
DATES = ["999999999d", "9999-12-31", "0001-01-01", "0001-01-01T00:00+05:00", "yesterday", "7d"]
WORDS = ["nope", "-", "--", "message", "bm25:message", "turn_pair", "a,b,,c", "\udcff", " ", "@x"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The paths values are drawn from, and a store to search."""
    root = tmp_path_factory.mktemp("fuzz")
    history = root / "history"
    history.mkdir()
    source = next(iter(sorted((sample_data_path() / "transcripts").rglob("*.jsonl"))))
    shutil.copy(source, history / source.name)
    store = root / "store"
    argv = ["index", str(history), "--store", str(store), "--embedder", "hash", "-q"]
    assert main(argv) == 0
    (root / "empty").mkdir()
    os.mkfifo(root / "fifo")
    (root / "junk.json").write_text('{"not": "what anyone wants"')
    return {
        "history": history,
        "store": store,
        "empty": root / "empty",
        "fifo": root / "fifo",
        "junk": root / "junk.json",
        "missing": root / "missing",
        "zero": Path("/dev/zero"),
        "root": root,
    }


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {n: p for n, p in sub.choices.items() if n not in LEFT_OUT_COMMANDS}


COMMANDS = _commands()


def _valid(action: argparse.Action, world: dict[str, Path]) -> list[str]:
    """Values the option takes (so that examples get past the parser and deeper)."""
    if action.choices is not None:
        return [str(c) for c in action.choices]
    flag = action.option_strings[-1] if action.option_strings else ""
    if action.type is int or flag in ("-k", "--budget", "--max-tokens", "--turn", "--around"):
        return ["1", "3", "10"]
    if action.type is float:
        return ["0.5", "1", "0"]
    if flag in ("--since", "--until", "--now"):
        return ["2026-01-01", "7d", "yesterday", "2025-06-01T12:00"]
    if flag == "--store":
        return [str(world["store"])]
    return ["faiss", "nginx websockets", "message", str(world["history"])]


@st.composite
def _value(draw: st.DrawFn, action: argparse.Action, world: dict[str, Path]) -> str:
    """A valid value three times in four; else junk, a path or arbitrary text."""
    if draw(st.integers(0, 3)):
        return draw(st.sampled_from(_valid(action, world)))
    paths = [str(world[k]) for k in ("history", "store", "empty", "fifo", "junk", "missing")]
    junk = st.sampled_from([*NUMBERS, *DATES, *WORDS, *paths, "/dev/zero"])
    return draw(st.one_of(junk, st.text(st.characters(blacklist_characters="\x00"), max_size=12)))


@st.composite
def command_lines(draw: st.DrawFn, world: dict[str, Path]) -> list[str]:
    """A subcommand, some of its options (one in four) with values, and its positionals."""
    paths = [str(world[k]) for k in ("history", "store", "empty", "fifo", "junk", "missing")]
    name = draw(st.sampled_from(sorted(COMMANDS)))
    parser = COMMANDS[name]
    argv = [name]
    for action in parser._actions:
        if not action.option_strings:  # a positional
            if name == "judge":
                argv += ["agreement", draw(st.sampled_from(paths)), draw(st.sampled_from(paths))]
                continue
            most = {None: 1, "?": 1}.get(action.nargs, 2)  # type: ignore[call-overload]
            count = draw(st.integers(0 if action.nargs in ("?", "*") else 1, most))
            argv += [draw(_value(action, world)) for _ in range(count)]
            continue
        flag = action.option_strings[-1]
        if flag in LEFT_OUT_OPTIONS or draw(st.integers(0, 3)):
            continue
        argv += [flag] if action.nargs == 0 else [flag, draw(_value(action, world))]
    if name == "index":  # always the test embedder, and a fresh store unless one was drawn
        argv += ["--embedder", "hash", "-q"]
        if "--store" not in argv:
            argv += ["--store", tempfile.mkdtemp(dir=world["root"]) + "/store"]
    elif name != "judge" and "--store" not in argv:
        argv += ["--store", str(world["store"])]
    return argv


@settings(
    max_examples=int(os.environ.get("CONVLAB_FUZZ_EXAMPLES", "60")),  # more: a longer hunt
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_any_command_line_exits_0_1_or_2(world: dict[str, Path], data: st.DataObject) -> None:
    argv = data.draw(command_lines(world))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    event(f"{argv[0]} exit {code}")  # --hypothesis-show-statistics: how far examples got
    assert code in (0, 1, 2), (argv, code, err.getvalue()[-600:])
    assert "Traceback" not in err.getvalue(), argv
    if code == 2:
        assert err.getvalue().strip(), argv  # a refusal says why


def test_the_fuzzer_reaches_every_command_but_the_left_out() -> None:
    assert set(COMMANDS) == {"index", "search", "show", "stats", "prune", "judge"}
    flags = {f for a in COMMANDS["search"]._actions for f in a.option_strings}
    assert {"--since", "--until", "--store", "-k"} <= flags
