"""convlab: a research toolkit for conversational memory.

Frames flow: :func:`load` -> :func:`turns` -> :func:`chunks` -> :func:`units` ->
:func:`search` -> :func:`resurrect`; :func:`evaluate` compares systems on labelled queries;
:func:`open_store` searches a store that ``convlab index`` built, with the same systems.

The names below are imported on first use (PEP 562), so ``import convlab`` is quick, changes
nothing in the process (no environment variable, no registry of another package), and a loader
worker process does not pay for scipy, FAISS or the model's libraries it never uses. Submodules
(``convlab.evaluation.plots``, ``convlab.evaluation.datasets``, ...) load the same way. A name whose
optional dependency is missing fails when it is used, naming its pip extra
(:func:`convlab.extras.require`).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING, Any

from convlab._version import __version__ as __version__

_EXPORTS = {
    "STRATEGIES": "convlab.strategies",
    "CachedEmbedder": "convlab.embed",
    "ContentPolicy": "convlab.pipeline.policy",
    "Corpus": "convlab.loaders",
    "EvalConfig": "convlab.evaluation.config",
    "HashEmbedder": "convlab.embed",
    "LoadError": "convlab.loaders",
    "MiniLMEmbedder": "convlab.embed",
    "SearchOptions": "convlab.retrieval.options",
    "System": "convlab.systems.system",
    "Tuning": "convlab.systems.system",
    "VectorIndex": "convlab.index",
    "View": "convlab.systems.system",
    "build_index": "convlab.build",
    "chunks": "convlab.pipeline.chunks",
    "evaluate": "convlab.evaluation.evaluate",
    "fuse": "convlab.fusion",
    "load": "convlab.loaders",
    "make_embedder": "convlab.embed",
    "open_store": "convlab.store",
    "resurrect": "convlab.resurrection",
    "search": "convlab.retrieval.search",
    "tune": "convlab.evaluation.tune",
    "turns": "convlab.pipeline.turns",
    "units": "convlab.pipeline.units",
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
    "Tuning",
    "VectorIndex",
    "View",
    "build_index",
    "chunks",
    "evaluate",
    "fuse",
    "load",
    "make_embedder",
    "open_store",
    "resurrect",
    "search",
    "tune",
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


if TYPE_CHECKING:  # what type checkers and IDEs see
    from convlab.build import build_index
    from convlab.embed import CachedEmbedder, HashEmbedder, MiniLMEmbedder, make_embedder
    from convlab.evaluation.config import EvalConfig
    from convlab.evaluation.evaluate import evaluate
    from convlab.evaluation.tune import tune
    from convlab.fusion import fuse
    from convlab.index import VectorIndex
    from convlab.loaders import Corpus, LoadError, load
    from convlab.pipeline.chunks import chunks
    from convlab.pipeline.policy import ContentPolicy
    from convlab.pipeline.turns import turns
    from convlab.pipeline.units import units
    from convlab.resurrection import resurrect
    from convlab.retrieval.options import SearchOptions
    from convlab.retrieval.search import search
    from convlab.store import open_store
    from convlab.strategies import STRATEGIES
    from convlab.systems.system import System, Tuning, View
