"""Size limits of the package: no function over 100 lines, no module over 450 (issue 24).

A function's size is its ``def`` line to its last line (docstring and comments included,
decorators not); a method or a nested function counts on its own and inside its parent. A
module's size is its number of lines. ``python -m tests.test_sizes`` prints every module and
function over the limits.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "convlab"
MAX_FUNCTION_LINES = 100
MAX_MODULE_LINES = 450


def function_sizes(tree: ast.Module) -> list[tuple[str, int, int]]:
    """``(qualified name, first line, lines)`` of every function and method of ``tree``."""
    out: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    size = (child.end_lineno or child.lineno) - child.lineno + 1
                    out.append((name, child.lineno, size))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def offenders(package: Path = PACKAGE) -> list[tuple[str, str]]:
    """``(module, what)`` for every module and function of ``package`` over the limits."""
    out: list[tuple[str, str]] = []
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            out.append((module, f"{module}: {lines} lines (limit {MAX_MODULE_LINES})"))
        for name, line, size in function_sizes(ast.parse(text, filename=str(path))):
            if size > MAX_FUNCTION_LINES:
                out.append(
                    (module, f"{module}:{line} {name}: {size} lines (limit {MAX_FUNCTION_LINES})")
                )
    return out


def test_function_sizes_are_measured_from_def_to_last_line() -> None:
    tree = ast.parse(
        "@cache\n"  # line 1: a decorator is not counted
        "def f():\n"  # 2
        "    def g():\n"  # 3
        "        return 1\n"  # 4
        "    return g\n"  # 5
        "class C:\n"  # 6
        "    async def m(self):\n"  # 7
        '        """doc"""\n'  # 8
        "\n"  # 9
        "        return 2\n"  # 10
    )
    assert function_sizes(tree) == [("f", 2, 4), ("f.g", 3, 2), ("C.m", 7, 4)]


def test_no_module_or_function_over_the_limits() -> None:
    found = [what for _, what in offenders()]
    assert not found, "over the size limits:\n" + "\n".join(found)


if __name__ == "__main__":
    for _, what in offenders():
        print(what)
