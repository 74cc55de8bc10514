"""Transcript readers, one module per format; importing this package registers them all."""

from convlab.loaders import (  # noqa: F401  (register the formats; order = detection order)
    amplifier,
    chatgpt,
    claude_code,
    codex,
    locomo,
    longmemeval,
    message_lists,
    sharegpt,
)
from convlab.loaders.base import Corpus, CorpusBuilder, LoadError, LoadReport
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
