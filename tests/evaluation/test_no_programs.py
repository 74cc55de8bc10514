"""The evaluation library holds no programs: the programs are ``eval/`` and ``convlab.app``.

No module of ``convlab.evaluation`` parses a command line, prints, exits, imports the app layer
or reads ``tests/``: it takes typed configs and returns or writes results (issue 24).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from convlab.paths import REPO_ROOT

MODULES = sorted((REPO_ROOT / "convlab" / "evaluation").glob("*.py"))


def _offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names.append(getattr(node, "module", None) or "")
            for name in names:
                if name == "argparse" or name.startswith(("convlab.app", "eval")):
                    found.append(f"line {node.lineno}: imports {name}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("print", "exit", "quit"):
                found.append(f"line {node.lineno}: calls {node.func.id}()")
        elif isinstance(node, ast.Attribute) and node.attr == "exit":
            if isinstance(node.value, ast.Name) and node.value.id == "sys":
                found.append(f"line {node.lineno}: sys.exit")
        elif isinstance(node, ast.Name) and node.id == "SystemExit":
            found.append(f"line {node.lineno}: SystemExit")
        elif isinstance(node, ast.Constant) and node.value == "tests":
            found.append(f"line {node.lineno}: a path into tests/")
    return found


def test_there_are_modules() -> None:
    assert len(MODULES) > 20


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_a_library_module_is_no_program(path: Path) -> None:
    assert _offences(path) == []


def test_the_check_finds_a_program(tmp_path: Path) -> None:
    program = tmp_path / "p.py"
    program.write_text(
        "import argparse\nimport sys\nfrom convlab.app.exits import EXIT_OK\n"
        "def main():\n    print('x')\n    sys.exit(2)\n"
        "ROOT = Path(__file__).parents[2] / 'tests' / 'fixtures'\n"
    )
    assert _offences(program) == [
        "line 1: imports argparse",
        "line 3: imports convlab.app.exits",
        "line 5: calls print()",
        "line 6: sys.exit",
        "line 7: a path into tests/",
    ]
