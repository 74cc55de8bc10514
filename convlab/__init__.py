"""convlab: a research toolkit for conversational memory.

Frames flow: :func:`load` -> :func:`turns` -> :func:`sentences` -> :func:`units` ->
:func:`search` -> :func:`resurrect`; :func:`evaluate` compares systems on labelled queries.
"""

__version__ = "0.1.0"

from convlab import model as _model  # noqa: F401  (sets HF_HUB_OFFLINE before anything loads)
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
    "evaluate",
    "load",
    "resurrect",
    "search",
    "sentences",
    "turns",
    "units",
]
