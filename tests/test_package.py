"""The top-level package: lazy names, no side effects at import, extras that fail late."""

from __future__ import annotations

import ast
import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import convlab


def _packages() -> list[str]:
    """Every package of convlab, the root first."""
    root = Path(convlab.__file__).parent
    inner = (
        p.parent.relative_to(root).parts for p in root.rglob("__init__.py") if p.parent != root
    )
    return ["convlab", *sorted(".".join(("convlab", *parts)) for parts in inner)]


def _lazy_packages() -> list[str]:
    """The packages whose names are imported on first use (read, not imported)."""
    root = Path(convlab.__file__).parent.parent
    return [
        p
        for p in _packages()
        if "lazy_exports(" in (root / p.replace(".", "/") / "__init__.py").read_text()
    ]


def test_every_public_name_resolves_to_its_module_object():
    from convlab.loaders import load
    from convlab.pipeline.turns import turns

    assert convlab.__all__ == list(convlab._EXPORTS)  # one list
    for name in convlab.__all__:
        assert getattr(convlab, name) is not None
    assert convlab.load is load
    assert convlab.turns is turns
    assert convlab.evaluation.datasets.__name__ == "convlab.evaluation.datasets"


@pytest.mark.parametrize("package", _packages())
def test_every_package_has_one_export_list_of_names_that_resolve(package: str) -> None:
    module = importlib.import_module(package)
    assert isinstance(module.__all__, list), f"{package} has no __all__"
    assert len(set(module.__all__)) == len(module.__all__), f"{package}: a name listed twice"
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"


@pytest.mark.parametrize("package", _lazy_packages())
def test_lazy_exports_are_what_type_checkers_see(package: str) -> None:
    # a package whose names are imported on first use (convlab._lazy) re-exports each of them,
    # from the module its _EXPORTS names, under `if TYPE_CHECKING:`; and no export is hidden by
    # a submodule of the same name (importing `convlab.pipeline.chunks` would replace it)
    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    block = next(
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    )
    seen = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom)
        for alias in node.names:
            assert alias.asname == alias.name, f"{package}: {alias.name} is not re-exported"
            seen[alias.name] = node.module
    # an export whose module is the package's submodule of its own name is that submodule
    exports = module._EXPORTS.items()
    assert seen == {n: package if m == f"{package}.{n}" else m for n, m in exports}
    submodules = {m.name for m in pkgutil.iter_modules(module.__path__)}
    for name, target in module._EXPORTS.items():
        assert name not in submodules or target == f"{package}.{name}", f"{package}.{name}"


def test_unknown_attribute_raises_attribute_error():
    with pytest.raises(AttributeError, match="no_such_thing"):
        _ = convlab.no_such_thing  # type: ignore[attr-defined]


def _run(code: str, env: dict[str, str] | None = None) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return out.stdout.split()


def _env_without_offline() -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    }


def test_import_leaves_the_environment_and_heavy_libraries_alone():
    # `import convlab` (and the loaders a worker process imports) changes no environment
    # variable and loads neither scipy, FAISS nor the model's libraries (polars is imported
    # first: it sets its own allocator variable when imported)
    code = (
        "import os, sys, numpy, polars; before = dict(os.environ); "
        "import convlab, convlab.loaders, convlab.embed, convlab.index, convlab.engines; "
        "print(dict(os.environ) == before, 'HF_HUB_OFFLINE' in os.environ, "
        "sorted(m for m in ('scipy', 'faiss', 'torch', 'sentence_transformers', 'transformers', "
        "'bm25s', 'ray') if m in sys.modules) or 'none')"
    )
    assert _run(code, _env_without_offline()) == ["True", "False", "none"]


@pytest.mark.model
def test_loading_the_model_switches_the_hub_off_and_never_connects():
    # every socket connection fails in this process: loading and running the model must not try
    code = (
        "import os, socket\n"
        "def refuse(*a, **k): raise OSError('network used')\n"
        "socket.socket.connect = refuse; socket.create_connection = refuse\n"
        "from convlab.embed import MiniLMEmbedder\n"
        "e = MiniLMEmbedder(show_progress=False)\n"
        "print('HF_HUB_OFFLINE' in os.environ)\n"
        "v = e.encode(['nginx websockets'])\n"
        "import huggingface_hub.constants as c\n"
        "print(os.environ['HF_HUB_OFFLINE'], os.environ['TRANSFORMERS_OFFLINE'], c.HF_HUB_OFFLINE,"
        " v.shape[1])\n"
    )
    assert _run(code, _env_without_offline()) == ["False", "1", "1", "True", "384"]


def test_a_missing_extra_fails_late_and_names_it(monkeypatch: pytest.MonkeyPatch):
    from convlab.embed import MiniLMEmbedder
    from convlab.extras import require
    from convlab.index import BM25Index, VectorIndex

    for module in ("faiss", "sentence_transformers", "bm25s"):
        monkeypatch.setitem(sys.modules, module, None)  # `import <module>` now fails
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    with pytest.raises(ImportError, match=r"convlab-memory\[index\] is needed for a FAISS index: "):
        VectorIndex.build(pl.DataFrame({"unit_id": ["u"]}), np.ones((1, 2)), model_id="m")
    with pytest.raises(ImportError, match=r"pip install 'convlab-memory\[model\]'"):
        MiniLMEmbedder()
    with pytest.raises(ImportError, match=r"convlab-memory\[index\] is needed for BM25"):
        BM25Index.build(pl.DataFrame({"text": ["a b"]}))
    with pytest.raises(
        ImportError, match=r"^convlab-memory\[judge\] is needed \(faiss\): pip install"
    ):
        require("faiss", "judge")


def test_importing_a_submodule_keeps_the_function_of_the_same_name():
    code = (
        "import convlab.retrieval.search, convlab.evaluation.evaluate, convlab.pipeline.units, "
        "convlab.resurrection, convlab; "
        "print(*(type(getattr(convlab, n)).__name__ for n in "
        "('search', 'evaluate', 'units', 'turns', 'resurrect')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["function"] * 5


def test_the_package_never_asserts() -> None:
    # checks of input raise errors that name what is wrong; `python -O` would drop an assert
    from pathlib import Path

    root = Path(convlab.__file__).parent
    found = [
        f"{path.relative_to(root)}:{node.lineno}"
        for path in sorted(root.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Assert)
    ]
    assert found == []


def test_the_distribution_is_convlab_memory_and_imports_as_convlab() -> None:
    """`convlab` on the package index is another project (ConvLab-3): ours is convlab-memory."""
    import tomllib
    from importlib import metadata
    from pathlib import Path

    import convlab

    project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    assert project["name"] == "convlab-memory"
    assert metadata.version("convlab-memory") == convlab.__version__
    extras = project["optional-dependencies"]
    # an extra that names the project names this distribution, not the other one
    assert all(not d.startswith("convlab[") for deps in extras.values() for d in deps), extras
