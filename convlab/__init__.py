"""convlab: a research toolkit for conversational memory.

Frames flow: :func:`load` -> :func:`turns` -> :func:`sentences` -> :func:`units` ->
:func:`search` -> :func:`resurrect`; :func:`evaluate` compares systems on labelled queries.

The names below are imported on first use (PEP 562), so ``import convlab`` is quick and a
loader worker process does not pay for scipy, FAISS or the model's libraries it never uses.
Submodules (``convlab.plots``, ``convlab.datasets``, ...) load the same way.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import types
from typing import TYPE_CHECKING, Any

from convlab import model as _model  # noqa: F401  (sets HF_HUB_OFFLINE before anything loads)

__version__ = "0.1.0"

_EXPORTS = {
    "STRATEGIES": "convlab.strategies",
    "CachedEmbedder": "convlab.embed",
    "ContentPolicy": "convlab.policy",
    "Corpus": "convlab.loaders",
    "EvalConfig": "convlab.evaluate",
    "HashEmbedder": "convlab.embed",
    "LoadError": "convlab.loaders",
    "MiniLMEmbedder": "convlab.embed",
    "SearchOptions": "convlab.search",
    "System": "convlab.evaluate",
    "VectorIndex": "convlab.index",
    "build_index": "convlab.build",
    "evaluate": "convlab.evaluate",
    "load": "convlab.loaders",
    "resurrect": "convlab.resurrect",
    "search": "convlab.search",
    "sentences": "convlab.sentences",
    "turns": "convlab.turns",
    "units": "convlab.units",
}
_SUBMODULES = frozenset(m.name for m in pkgutil.iter_modules(__path__))

__all__ = [
    "STRATEGIES",
    "CachedEmbedder",
    "ContentPolicy",
    "Corpus",
    "EvalConfig",
    "HashEmbedder",
    "LoadError",
    "MiniLMEmbedder",
    "SearchOptions",
    "System",
    "VectorIndex",
    "build_index",
    "evaluate",
    "load",
    "resurrect",
    "search",
    "sentences",
    "turns",
    "units",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"convlab.{name}")
    else:
        raise AttributeError(f"module 'convlab' has no attribute {name!r}")
    globals()[name] = value  # next time a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_SUBMODULES})


class _Package(types.ModuleType):
    """The package module: ``convlab.turns`` stays the function when the module is imported.

    The import system sets a submodule as an attribute of its package, and six functions
    (``turns``, ``sentences``, ``units``, ``search``, ``resurrect``, ``evaluate``) share the
    name of their module.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if (
            name in _EXPORTS
            and isinstance(value, types.ModuleType)
            and value.__name__ == f"{__name__}.{name}"
        ):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


if TYPE_CHECKING:  # what type checkers and IDEs see
    from convlab.build import build_index
    from convlab.embed import CachedEmbedder, HashEmbedder, MiniLMEmbedder
    from convlab.evaluate import EvalConfig, System, evaluate
    from convlab.index import VectorIndex
    from convlab.loaders import Corpus, LoadError, load
    from convlab.policy import ContentPolicy
    from convlab.resurrect import resurrect
    from convlab.search import SearchOptions, search
    from convlab.sentences import sentences
    from convlab.strategies import STRATEGIES
    from convlab.turns import turns
    from convlab.units import units
