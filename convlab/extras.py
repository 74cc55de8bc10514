"""Optional dependencies: imported when a feature is used, failing with the pip extra to install.

``pip install convlab-memory`` brings only what loading and chunking transcripts need (polars,
numpy, pyarrow, orjson, msgspec, blingfire, tokenizers, filelock, tqdm). The model, FAISS, BM25, the
evaluation libraries, the notebook panels, ONNX and Ray are extras (see ``pyproject.toml``); code
that needs one imports it through :func:`require` at the moment it is needed, so ``import
convlab`` and the core never fail for a missing extra, and a feature that does fails with one
line naming the extra (as BERTopic does).

Example:
    >>> faiss = require("faiss", "index", feature="a vector index")  # doctest: +SKIP
    ImportError: convlab-memory[index] is needed for a vector index: pip install ...
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

__all__ = ["ensure_installed", "missing_extra", "require"]


def missing_extra(module: str, extra: str, feature: str | None = None) -> str:
    """The message for a missing optional module: the extra and the pip command."""
    what = f" for {feature}" if feature else f" ({module})"
    return f"convlab-memory[{extra}] is needed{what}: pip install 'convlab-memory[{extra}]'"


def require(module: str, extra: str, *, feature: str | None = None) -> ModuleType:
    """Import ``module``, an optional dependency of the extra ``extra``.

    Args:
        module: the dotted module name (``"faiss"``, ``"onnxruntime.quantization"``).
        extra: the pip extra that installs it (``"index"``, ``"model"``, ...).
        feature: what needs it, for the message (``"engine='ray'"``).

    Raises:
        ImportError: the module cannot be imported; the message names the extra, the pip
            command, and the original error.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{missing_extra(module, extra, feature)} ({exc})") from exc


def ensure_installed(module: str, extra: str, *, feature: str | None = None) -> None:
    """Fail now if ``module`` is not installed, without importing it (a cheap constructor check).

    Raises:
        ImportError: no such top-level module is installed; the message names the extra.
    """
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ImportError(f"{missing_extra(module, extra, feature)} (no module named {module!r})")
