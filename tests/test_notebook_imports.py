"""The notebooks use only public names, and are what ``notebooks/make_notebooks.py`` writes.

Public: a name of ``convlab.__all__`` (imported from ``convlab`` or used as ``convlab.NAME``), or
of a subpackage's ``__all__`` imported from that subpackage (``from convlab.evaluation import
plots``). A deep module path (``from convlab.evaluation.datasets import ...``) or a private name
is not public, even where it works.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
GENERATOR = NOTEBOOKS / "make_notebooks.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_notebooks", GENERATOR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _public(package: str) -> set[str] | None:
    """``package``'s ``__all__``, or None when it is not a public package of convlab."""
    if any(part.startswith("_") for part in package.split(".")):
        return None
    try:
        module = importlib.import_module(package)
    except ImportError:
        return None
    if not hasattr(module, "__path__"):  # a module, not a package: not an import path
        return None
    return set(getattr(module, "__all__", ()))


def private_uses(source: str) -> list[str]:
    """Each import from convlab, or ``convlab.NAME``, of a name that is not public."""
    tree = ast.parse(source)
    out: list[str] = []
    aliases = set()  # the names convlab itself is bound to (`import convlab as cl`)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "convlab":
                    aliases.add(alias.asname or "convlab")
                elif alias.name.startswith("convlab."):
                    out.append(f"line {node.lineno}: import {alias.name} (a deep module path)")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "convlab":
            public = _public(node.module or "")
            if public is None:
                out.append(f"line {node.lineno}: from {node.module} (not a public package)")
                continue
            for alias in node.names:
                if alias.name not in public:
                    out.append(f"line {node.lineno}: {alias.name} is not in {node.module}.__all__")
    import convlab

    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr not in convlab.__all__
        ):
            out.append(f"line {node.lineno}: convlab.{node.attr} is not in convlab.__all__")
    return out


def _cells(path: Path) -> list[str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def test_private_uses_are_found() -> None:
    source = (
        "import convlab\nimport convlab as cl\nimport convlab.store\n"  # line 3: a deep path
        "from convlab import load, _EXPORTS\n"  # 4: _EXPORTS is private
        "from convlab.evaluation import plots\n"  # 5: public
        "from convlab.evaluation.datasets import load_labelled\n"  # 6: a module
        "from convlab._lazy import lazy_exports\n"  # 7: a private module
        "from convlab.embed import CachedEmbedder, minilm\n"  # 8: minilm is not in __all__
        "convlab.turns(cl.chunks)\n"  # 9: public
        "cl.build.derive\n"  # 10: a module of convlab, not a public name
    )
    assert private_uses(source) == [
        "line 3: import convlab.store (a deep module path)",
        "line 4: _EXPORTS is not in convlab.__all__",
        "line 6: from convlab.evaluation.datasets (not a public package)",
        "line 7: from convlab._lazy (not a public package)",
        "line 8: minilm is not in convlab.embed.__all__",
        "line 10: convlab.build is not in convlab.__all__",
    ]


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_notebooks_import_only_public_names(path: Path) -> None:
    found = [
        f"cell {i}, {use}" for i, cell in enumerate(_cells(path)) for use in private_uses(cell)
    ]
    assert not found, f"{path.name}:\n" + "\n".join(found)


def test_the_generator_imports_only_public_names() -> None:
    module = _generator()
    found = [
        f"{name}, cell {i}: {use}"
        for name, cells in module.NOTEBOOKS.items()
        for i, (kind, source) in enumerate(cells)
        if kind == "code"
        for use in private_uses(source)
    ]
    assert not found + private_uses(GENERATOR.read_text(encoding="utf-8"))


def test_the_notebooks_are_what_the_generator_writes() -> None:
    module = _generator()
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(module.NOTEBOOKS)
    for name, cells in module.NOTEBOOKS.items():
        code = [source for kind, source in cells if kind == "code"]
        assert _cells(NOTEBOOKS / f"{name}.ipynb") == code, (
            f"{name}.ipynb differs from make_notebooks.py: run python notebooks/make_notebooks.py"
        )
