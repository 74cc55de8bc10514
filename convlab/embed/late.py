"""Late chunking's embedding step: one forward pass per window, a mean of token states per span.

Günther et al., "Late Chunking" (arXiv 2409.04701). A pass is a text and the token spans of its
chunks (:class:`convlab.strategies.late.LatePass`); :func:`encode_passes` runs the encoder once
per pass (:meth:`convlab.protocols.TokenEmbedder.encode_tokens`) and keeps, per span, the mean of
its rows (:func:`span_means`): unnormalised, so that a unit of several chunks is the
token-weighted mean of its chunks' means (:func:`convlab.pipeline.late.late_vectors`). The
embedding cache stores these means keyed by the pass
(:meth:`convlab.embed.CachedEmbedder.encode_passes`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from convlab.protocols import Embedder, TokenEmbedder

__all__ = ["Span", "encode_passes", "pass_keys", "span_means", "token_embedder"]

Span = tuple[int, int]
"""Rows ``[start, end)`` of a pass's token states ([CLS] is row 0)."""


def span_means(states: np.ndarray, spans: Sequence[Span]) -> np.ndarray:
    """``(len(spans), dimension)`` float32: the mean of ``states[start:end]`` per span.

    An empty span is a zero row.

    Example:
        >>> states = np.array([[0.0, 0.0], [1.0, 2.0], [3.0, 4.0], [5.0, 0.0]])
        >>> span_means(states, [(1, 3), (3, 4)]).tolist()
        [[2.0, 3.0], [5.0, 0.0]]
    """
    out = np.zeros((len(spans), states.shape[1]), dtype=np.float32)
    for i, (start, end) in enumerate(spans):
        if end > start:
            out[i] = states[start:end].mean(axis=0)
    return out


def token_embedder(embedder: Embedder) -> TokenEmbedder:
    """``embedder`` as a :class:`TokenEmbedder`, or a ``TypeError`` naming what it lacks."""
    if not isinstance(embedder, TokenEmbedder):
        raise TypeError(
            f"{type(embedder).__qualname__} ({embedder.model_id}) gives no token states "
            "(encode_tokens): late chunking needs MiniLM (torch, onnx, onnx-int8) or the hash "
            "embedder"
        )
    return embedder


def encode_passes(
    embedder: Embedder, texts: Sequence[str], spans: Sequence[Sequence[Span]], max_tokens: int
) -> list[np.ndarray]:
    """Each pass's span means: one forward pass per text, no cache.

    Raises:
        TypeError: the embedder gives no token states.
        ValueError: a text of more than ``max_tokens`` tokens, or a pass whose text the model
            cuts into another number of tokens than its spans say (the spans would be wrong).
    """
    states = token_embedder(embedder).encode_tokens(list(texts), max_tokens)
    out = []
    for text, s, rows in zip(texts, spans, states, strict=True):
        expected = (s[-1][1] if s else 1) + 1  # [SEP] after the last span
        if rows.shape[0] != expected:
            raise ValueError(
                f"a late-chunking pass tokenised to {rows.shape[0]} tokens, its chunks add up "
                f"to {expected}: {text[:80]!r}"
            )
        out.append(span_means(rows, s))
    return out


def pass_keys(text: str, spans: Sequence[Span]) -> list[bytes]:
    """The cache keys of a pass's span means: sha256 of the pass text and the span."""
    base = hashlib.sha256(b"late-pass\x1f" + text.encode("utf-8", "surrogatepass")).digest()
    return [hashlib.sha256(base + f"{a}:{b}".encode()).digest() for a, b in spans]
