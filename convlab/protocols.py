"""The contracts between convlab's stages: one Protocol per pluggable kind of part.

A part satisfies its Protocol structurally (no base class to inherit) and registers itself in its
kind's :class:`convlab.registry.Registry`. Code that takes a part is typed by its Protocol here,
never ``Any``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from convlab.strategies.base import Chunk

__all__ = ["Embedder", "Strategy"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of ``dimension``."""

    model_id: str
    dimension: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dimension)`` float32, each row of unit length."""
        ...


class Strategy(Protocol):
    """A way of turning one conversation's chunks into units (what is embedded).

    Registered in :data:`convlab.strategies.STRATEGIES` by
    :func:`convlab.strategies.register_strategy`; :func:`convlab.pipeline.units.units` calls it
    once per conversation. What a unit's docs are (its turns or its messages) is each chunk's
    ``doc_kind``, decided once per conversation when it was loaded: no flag is passed.
    """

    name: str

    def units(self, chunks: Sequence[Chunk], *, max_tokens: int) -> list[dict[str, object]]:
        """Units (:data:`convlab.schema.UNITS` columns by name) of one conversation's chunks.

        Args:
            chunks: one conversation's chunks, in conversation order.
            max_tokens: the unit's token limit, [CLS] and [SEP] included (at most 256).
        """
        ...
