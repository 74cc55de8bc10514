"""The contracts between convlab's stages: one Protocol per pluggable kind of part.

A part satisfies its Protocol structurally (no base class to inherit) and registers itself in its
kind's :class:`convlab.registry.Registry`. Code that takes a part is typed by its Protocol here,
never ``Any``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Embedder"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of ``dimension``."""

    model_id: str
    dimension: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dimension)`` float32, each row of unit length."""
        ...
