"""Transcript readers, one module per format; importing this package registers them all."""

from convlab.errors import LoadError
from convlab.loaders import (  # noqa: F401  (register the formats; detection order is each one's priority)
    amplifier,
    chatgpt,
    claude_code,
    codex,
    locomo,
    longmemeval,
    message_lists,
    sharegpt,
)
from convlab.loaders.base import CorpusBuilder
from convlab.loaders.corpus import Corpus, LoadReport
from convlab.loaders.registry import FORMATS, detect, load, load_files, register_format

__all__ = [
    "FORMATS",
    "Corpus",
    "CorpusBuilder",
    "LoadError",
    "LoadReport",
    "detect",
    "load",
    "load_files",
    "register_format",
]
