"""Late chunking's vectors: a late strategy's units pooled from one pass per window of messages.

The passes and each chunk's home pass are :mod:`convlab.strategies.late`'s; the forward passes
and the span means are :mod:`convlab.embed.late`'s (through the embedding cache when the
embedder is a :class:`convlab.embed.CachedEmbedder`). A unit's vector is the mean of the token
states of its chunks in their home passes (each chunk's mean weighted by its tokens), L2-normalised
as the model's own pooling output is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from convlab.embed.cache import CachedEmbedder
from convlab.embed.late import encode_passes
from convlab.protocols import Chunk, Embedder
from convlab.strategies.late import LatePass, homes, passes

__all__ = ["LatePlan", "late_plan", "late_vectors", "late_views"]


@dataclass(frozen=True, slots=True)
class LatePlan:
    """The passes of some conversations and where each chunk's rows come from.

    Attributes:
        passes: every pass, conversation by conversation.
        home: chunk id -> (pass index in :attr:`passes`, position of the chunk in the pass).
    """

    passes: list[LatePass]
    home: dict[str, tuple[int, int]]

    @property
    def tokens(self) -> int:
        """Tokens the passes run through the model ([CLS] and [SEP] included)."""
        return sum(p.n_tokens for p in self.passes)


def late_plan(chunks: pl.DataFrame, window: int) -> LatePlan:
    """The passes of ``window`` tokens over every conversation of a chunks frame."""
    names = list(Chunk.__slots__)
    all_passes: list[LatePass] = []
    home: dict[str, tuple[int, int]] = {}
    s = chunks.sort("conversation_id", "position")
    for _, part in s.group_by("conversation_id", maintain_order=True):
        rows = [Chunk(**r) for r in part.select(names).iter_rows(named=True)]
        ps = passes(rows, window)
        home.update({c: (p + len(all_passes), j) for c, (p, j) in homes(ps).items()})
        all_passes.extend(ps)
    return LatePlan(all_passes, home)


def late_vectors(
    units: pl.DataFrame, chunks: pl.DataFrame, embedder: Embedder, window: int
) -> np.ndarray:
    """``(len(units), dimension)`` float32: each unit's late-chunking vector, unit length.

    Only the passes of the units' conversations run. A warm cache runs none.

    Args:
        units: a late strategy's units (their ``chunk_ids`` are what is pooled).
        chunks: the chunks frame they were made from.
        embedder: gives token states (:class:`convlab.protocols.TokenEmbedder`), or a
            :class:`CachedEmbedder` around one.
        window: tokens of a pass.

    Raises:
        TypeError: the embedder gives no token states.
    """
    if units.height == 0:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    wanted = chunks.filter(
        pl.col("conversation_id").is_in(units["conversation_id"].unique().to_list())
    )
    plan = late_plan(wanted, window)
    texts = [p.text for p in plan.passes]
    spans = [p.spans for p in plan.passes]
    if isinstance(embedder, CachedEmbedder):
        means = embedder.encode_passes(texts, spans, window)
    else:
        means = encode_passes(embedder, texts, spans, window)
    out = np.zeros((units.height, embedder.dimension), dtype=np.float32)
    for r, ids in enumerate(units["chunk_ids"].to_list()):
        total = 0
        for cid in ids:
            p, j = plan.home[cid]
            n = plan.passes[p].chunks[j].n_tokens
            out[r] += n * means[p][j]
            total += n
        out[r] /= max(total, 1)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return (out / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def late_views(
    frames: dict[str, tuple[pl.DataFrame, pl.DataFrame]],
    windows: dict[str, int],
    embedder: Embedder,
) -> tuple[dict[str, np.ndarray], int]:
    """Every late strategy's vectors, and how many pass look-ups one of them shared with another.

    Late strategies of one window over the same chunks run the same passes: the first runs
    them, the others read them from the cache. The second count is those reads (0 without a
    :class:`CachedEmbedder`), so that a cache that was cold before the build can be told from a
    warm one (``from_cache`` minus this is what earlier runs gave).

    Args:
        frames: strategy -> (its units, its chunks).
        windows: strategy -> tokens of its passes (the late strategies to make).
        embedder: as :func:`late_vectors`.
    """
    out: dict[str, np.ndarray] = {}
    shared, seen = 0, set()
    for strategy, window in windows.items():
        before = embedder.stats.from_cache if isinstance(embedder, CachedEmbedder) else 0
        units, chunks = frames[strategy]
        out[strategy] = late_vectors(units, chunks, embedder, window)
        if window in seen and isinstance(embedder, CachedEmbedder):
            shared += embedder.stats.from_cache - before
        seen.add(window)
    return out, shared
