"""The ``local`` engine: the embedder's model in this process (what convlab always did)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from convlab.embed import embed_texts
from convlab.engines import register_engine

if TYPE_CHECKING:
    from convlab.embed import CachedEmbedder

__all__ = ["LocalEngine"]


@register_engine("local")
class LocalEngine:
    """Embeds in this process with :func:`convlab.embed.embed_texts`; the default engine."""

    name = "local"

    def embed(self, texts: Sequence[str], embedder: CachedEmbedder) -> np.ndarray:
        """Each distinct text once, through the cache; rows in input order."""
        return embed_texts(texts, embedder)

    def close(self) -> None:
        """Nothing to release: the model belongs to the embedder."""

    def describe(self) -> dict[str, Any]:
        """The engine's settings, for manifests."""
        return {"name": self.name}
