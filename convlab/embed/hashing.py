"""A deterministic fake embedder for fast tests: a hashed bag of words, no model."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

__all__ = ["HashEmbedder"]


def _normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


class HashEmbedder:
    """Lower-cased words hashed into ``dimension`` buckets (signed), rows L2-normalised.

    Texts that share words are similar; no model is loaded. For fast unit tests only. A text
    with no word gets the unit vector of bucket 0.

    Example:
        >>> HashEmbedder(8).encode(["fix login", "login fix"]).shape
        (2, 8)
    """

    name = "hash"

    def __init__(self, dimension: int = 64) -> None:
        self.dimension = dimension
        self.model_id = f"hash-{dimension}"
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Hashed bag of words per text."""
        self.calls += 1
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
                out[i, h % self.dimension] += 1.0 if (h >> 32) & 1 else -1.0
            if not out[i].any():
                out[i, 0] = 1.0
        return _normalise(out)

    def encode_tokens(self, texts: Sequence[str], max_tokens: int) -> list[np.ndarray]:
        """A hashed one-hot row per token of the model's tokenizer ([CLS] and [SEP] included).

        Raises:
            ValueError: a text of more than ``max_tokens`` tokens.
        """
        from convlab.model import tokenizer

        self.calls += 1
        out = []
        for e in tokenizer().encode_batch(list(texts)):
            if len(e.ids) > max_tokens:
                raise ValueError(f"a text of {len(e.ids)} tokens does not fit {max_tokens}")
            rows = np.zeros((len(e.ids), self.dimension), dtype=np.float32)
            for r, token in enumerate(e.tokens):
                h = int.from_bytes(
                    hashlib.blake2b(token.encode(), digest_size=8).digest(), "little"
                )
                rows[r, h % self.dimension] = 1.0 if (h >> 32) & 1 else -1.0
            out.append(rows)
        return out
