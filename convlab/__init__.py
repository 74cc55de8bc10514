"""convlab: a research toolkit for conversational memory.

Frames flow: :func:`load` -> :func:`turns` -> :func:`chunks` -> :func:`units` ->
:func:`search` -> :func:`resurrect`; :func:`evaluate` compares systems on labelled queries;
:func:`load_labelled` reads them (:func:`sample_data_path`: the bundled sample); :func:`open_store`
searches a store that ``convlab index`` built, with the same systems.

The names below are imported on first use (PEP 562), so ``import convlab`` is quick, changes
nothing in the process (no environment variable, no registry of another package), and a loader
worker process does not pay for scipy, FAISS or the model's libraries it never uses. Submodules
(``convlab.evaluation.plots``, ``convlab.evaluation.datasets``, ...) load the same way. A name whose
optional dependency is missing fails when it is used, naming its pip extra
(:func:`convlab.extras.require`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from convlab._lazy import lazy_exports
from convlab._version import __version__ as __version__

# The public names, each with the module it lives in: the one list (``__all__`` is made from it)
_EXPORTS = {
    "STRATEGIES": "convlab.strategies",
    "CachedEmbedder": "convlab.embed",
    "ContentPolicy": "convlab.pipeline.policy",
    "Corpus": "convlab.loaders",
    "EvalConfig": "convlab.evaluation.config",
    "Given": "convlab.built",
    "HashEmbedder": "convlab.embed",
    "IndexSpec": "convlab.specs",
    "LoadError": "convlab.loaders",
    "MiniLMEmbedder": "convlab.embed",
    "SearchOptions": "convlab.retrieval.options",
    "System": "convlab.systems.system",
    "Tuning": "convlab.systems.system",
    "UnitSpec": "convlab.specs",
    "VectorIndex": "convlab.index",
    "View": "convlab.systems.system",
    "build_index": "convlab.build",
    "chunks": "convlab.pipeline.chunks",
    "evaluate": "convlab.evaluation.evaluate",
    "fuse": "convlab.fusion",
    "load": "convlab.loaders",
    "load_labelled": "convlab.evaluation.datasets",
    "make_embedder": "convlab.embed",
    "open_store": "convlab.store",
    "resurrect": "convlab.resurrection",
    "sample_data_path": "convlab.paths",
    "search": "convlab.retrieval.search",
    "tune": "convlab.evaluation.tune",
    "turns": "convlab.pipeline.turns",
    "units": "convlab.pipeline.units",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, re-exported
    from convlab.build import build_index as build_index
    from convlab.built import Given as Given
    from convlab.embed import CachedEmbedder as CachedEmbedder
    from convlab.embed import HashEmbedder as HashEmbedder
    from convlab.embed import MiniLMEmbedder as MiniLMEmbedder
    from convlab.embed import make_embedder as make_embedder
    from convlab.evaluation.config import EvalConfig as EvalConfig
    from convlab.evaluation.datasets import load_labelled as load_labelled
    from convlab.evaluation.evaluate import evaluate as evaluate
    from convlab.evaluation.tune import tune as tune
    from convlab.fusion import fuse as fuse
    from convlab.index import VectorIndex as VectorIndex
    from convlab.loaders import Corpus as Corpus
    from convlab.loaders import LoadError as LoadError
    from convlab.loaders import load as load
    from convlab.paths import sample_data_path as sample_data_path
    from convlab.pipeline.chunks import chunks as chunks
    from convlab.pipeline.policy import ContentPolicy as ContentPolicy
    from convlab.pipeline.turns import turns as turns
    from convlab.pipeline.units import units as units
    from convlab.resurrection import resurrect as resurrect
    from convlab.retrieval.options import SearchOptions as SearchOptions
    from convlab.retrieval.search import search as search
    from convlab.specs import IndexSpec as IndexSpec
    from convlab.specs import UnitSpec as UnitSpec
    from convlab.store import open_store as open_store
    from convlab.strategies import STRATEGIES as STRATEGIES
    from convlab.systems.system import System as System
    from convlab.systems.system import Tuning as Tuning
    from convlab.systems.system import View as View
