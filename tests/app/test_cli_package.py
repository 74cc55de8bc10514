"""The layout of the ``convlab`` command: one module per subcommand, choices from registries.

The rest of the command's behaviour is tested in tests/test_cli.py (output) and
tests/test_cli_exits.py (the exit-code contract).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from convlab.app.cli import main
from convlab.app.cli.main import build_parser, commands
from convlab.app.cli.options import embedder_for_vectors, make_embedder, parse_date
from convlab.app.exits import EXIT_OK, UsageError
from convlab.embed import HashEmbedder
from convlab.embed.factory import EMBEDDERS
from convlab.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "convlab"


def _subparser(name: str):  # type: ignore[no-untyped-def]
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return sub.choices[name]  # type: ignore[index]


def _choices(name: str, option: str) -> list[str]:
    (action,) = [a for a in _subparser(name)._actions if option in a.option_strings]
    return list(action.choices)


def test_every_command_is_a_module_with_its_parser_and_run() -> None:
    assert [c.NAME for c in commands()] == [
        "index",
        "search",
        "show",
        "stats",
        "prune",
        "eval",
        "judge",
        "mcp",
        "serve",
    ]
    for command in commands():
        assert _subparser(command.NAME).get_default("run") is command.run


def test_choices_come_from_the_registries() -> None:
    from convlab.embed import BACKENDS
    from convlab.engines import ENGINES
    from convlab.index import INDEX_KINDS
    from convlab.pipeline.redact import REDACT_MODES
    from convlab.strategies import STRATEGIES

    assert _choices("index", "--strategy") == sorted(STRATEGIES)
    assert _choices("index", "--index") == list(INDEX_KINDS)
    assert _choices("index", "--redact") == list(REDACT_MODES)
    assert _choices("index", "--backend") == list(BACKENDS)
    assert _choices("index", "--engine") == sorted(ENGINES)
    for command in ("index", "search", "judge"):
        assert _choices(command, "--embedder") == ["hash", "minilm", "minilm-ft", "static"]
    from convlab.resurrection import POLICIES

    for command in ("search", "show"):
        assert _choices(command, "--policy") == list(POLICIES.names())
    assert _choices("search", "--backend") == list(BACKENDS)
    assert _choices("eval", "--backend") == list(BACKENDS)


def _vectors(model_id: str, embedder: str) -> Any:
    """What embedder_for_vectors reads of a store's manifest."""
    return SimpleNamespace(model_id=model_id, embedder=embedder)


def test_the_embedder_of_a_store_is_read_from_its_manifest() -> None:
    emb = embedder_for_vectors(_vectors("hash-8", "hash"), None, None)
    assert isinstance(emb, HashEmbedder)
    assert emb.dimension == 8  # a hash store of 8 dimensions gets 8-dimensional queries
    named = embedder_for_vectors(_vectors("hash-16", "hash"), None, None)
    assert isinstance(named, HashEmbedder)
    assert named.dimension == 16
    assert EMBEDDERS.names() == (
        "hash",
        "minilm",
        "minilm-ft",
        "static",
    )  # the CLI's choices are the package's


def test_an_unknown_model_id_is_a_usage_error_naming_it() -> None:
    with pytest.raises(UsageError, match=r"'bert-base'.*onnx, onnx-int8, torch"):
        embedder_for_vectors(_vectors("bert-base", "minilm"), None, None)
    with pytest.raises(UsageError, match="unknown embedder 'nope'; valid: hash, minilm"):
        make_embedder("nope")
    with pytest.raises(UsageError, match="unknown embedder 'nope'; valid: hash, minilm"):
        embedder_for_vectors(_vectors("x", "nope"), None, None)


def test_parse_date_ends_a_bare_day_at_its_last_microsecond() -> None:
    until = parse_date("2026-01-31", "--until", end=True)
    assert until is not None
    assert until.isoformat() == "2026-01-31T23:59:59.999999+00:00"
    since = parse_date("2026-01-31T14:30+02:00", "--since")
    assert since is not None
    assert since.isoformat() == "2026-01-31T12:30:00+00:00"
    with pytest.raises(UsageError, match="--since expects a date"):
        parse_date("next tuesday", "--since")


def test_eval_help_lists_the_comparison_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--help"]) == EXIT_OK
    out = capsys.readouterr().out
    for option in ("--data", "--strategies", "--budgets", "--scope", "--out", "--backend"):
        assert option in out


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_nothing_in_the_package_or_its_tests_imports_the_eval_scripts() -> None:
    files = [*PACKAGE.rglob("*.py"), *(REPO_ROOT / "tests").rglob("*.py")]
    offenders = [
        str(f.relative_to(REPO_ROOT))
        for f in files
        if any(n == "eval" or n.startswith("eval.") for n in _imports(f))
    ]
    assert offenders == []


def test_nothing_in_the_package_puts_a_folder_on_sys_path() -> None:
    offenders = [
        str(f.relative_to(REPO_ROOT))
        for f in PACKAGE.rglob("*.py")
        if "sys.path.insert" in f.read_text(encoding="utf-8")
    ]
    assert offenders == []


@pytest.mark.parametrize("module", ["convlab", "convlab.app.cli"])
def test_python_dash_m_runs_the_command(module: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", module, "--version"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("convlab ")
