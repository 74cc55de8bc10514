"""all-MiniLM-L6-v2 fine-tuned contrastively, made at run time into the user's cache.

:func:`train` fine-tunes the bundled model on (query, positive, hard negative) triples with
sentence-transformers' ``MultipleNegativesRankingLoss`` (every other positive and negative of a
batch is a negative too) in a plain torch loop: seeded, one thread count, no ``datasets`` or
``accelerate`` (the ``SentenceTransformerTrainer`` needs both; this loop needs neither and is
deterministic on the CPU: same triples, recipe and thread count, the same weights).

:func:`ensure_finetuned` writes the model under ``cache_root()/finetuned/<slug of its id>``
(``CONVLAB_CACHE``, ``$XDG_CACHE_HOME/convlab`` or ``~/.cache/convlab``, as the ONNX export) the
first time it is asked for, atomically (a temporary folder renamed into place, under a lock):
the weights are never committed and never downloaded. The model id names the base model, the
data's fingerprint, the recipe and the fold (:func:`finetuned_model_id`):
``sentence-transformers/all-MiniLM-L6-v2+ft:<data>-<recipe>:fold3of5`` (``:all`` for all the
data), so embedding caches keep folds, data and recipes apart.

:class:`FineTunedEmbedder` embeds with such a model (registered as ``minilm-ft`` in
:data:`convlab.embed.factory.EMBEDDERS`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from convlab.atomic import fsync_dir
from convlab.embed.minilm import MiniLMEmbedder
from convlab.embed.onnx import cache_root
from convlab.model import MODEL_ID, load_sentence_transformer, offline_hub

__all__ = [
    "FineTuneRecipe",
    "FineTunedEmbedder",
    "TrainStats",
    "Triple",
    "ensure_finetuned",
    "finetuned_dir",
    "finetuned_model_id",
    "train",
]

FT_MARK = "+ft:"
"""What separates the base model's id from the fine-tuning's in a model id."""


@dataclass(frozen=True, slots=True)
class Triple:
    """One training example: a query, a unit that answers it, a unit that does not."""

    query: str
    positive: str
    negative: str


@dataclass(frozen=True, slots=True)
class FineTuneRecipe:
    """How a model is fine-tuned (its hash is part of the model id).

    Attributes:
        epochs: passes over the triples.
        batch_size: triples per step (each query's negatives: the batch's other units).
        learning_rate: AdamW's, linearly warmed up over ``warmup`` of the steps, then constant.
        warmup: the fraction of steps of the warm-up.
        max_seq_length: tokens a training text is cut to ([CLS] and [SEP] included); search
            still embeds up to 256.
        scale: MNRL's inverse temperature on the cosine similarities.
        seed: torch's and the shuffle's.
        threads: torch's CPU threads while training (a fixed count keeps runs identical).
    """

    epochs: int = 1
    batch_size: int = 32
    learning_rate: float = 2e-5
    warmup: float = 0.1
    max_seq_length: int = 128
    scale: float = 20.0
    seed: int = 0
    threads: int = 2

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 2 or self.threads < 1:
            raise ValueError("epochs and threads must be >= 1 and batch_size >= 2")
        if not 0 < self.learning_rate < 1 or not 0 <= self.warmup < 1:
            raise ValueError("learning_rate must be in (0, 1) and warmup in [0, 1)")
        if not 8 <= self.max_seq_length <= 256:
            raise ValueError(f"max_seq_length {self.max_seq_length} is outside [8, 256]")

    def digest(self) -> str:
        """8 hex digits naming the recipe (the thread count left out: it names no weights)."""
        fields = {k: v for k, v in asdict(self).items() if k != "threads"}
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:8]


@dataclass(frozen=True, slots=True)
class TrainStats:
    """What a training cost: triples, steps, seconds, the mean loss of the first and last step."""

    triples: int
    steps: int
    seconds: float
    first_loss: float
    last_loss: float


def finetuned_model_id(
    data_fingerprint: str, recipe: FineTuneRecipe, fold: int | None = None, folds: int = 1
) -> str:
    """The id of the model fine-tuned on one fold's training data (``fold`` None: all of it).

    Example:
        >>> finetuned_model_id("ab" * 32, FineTuneRecipe(), 2, 5).split("+")[1][:16]
        'ft:abababababab-'
    """
    data = re.sub(r"[^0-9a-zA-Z]", "", data_fingerprint)[:12]
    if not data:
        raise ValueError("the data fingerprint is empty")
    if fold is None:
        part = "all"
    elif not 0 <= fold < folds:
        raise ValueError(f"fold {fold} is not one of 0..{folds - 1}")
    else:
        part = f"fold{fold}of{folds}"
    return f"{MODEL_ID}{FT_MARK}{data}-{recipe.digest()}:{part}"


def finetuned_dir(model_id: str, cache_dir: str | Path | None = None) -> Path:
    """The folder a fine-tuned model lives in (it may not exist yet).

    Raises:
        ValueError: ``model_id`` is not one :func:`finetuned_model_id` makes.
    """
    if not model_id.startswith(MODEL_ID + FT_MARK):
        raise ValueError(f"{model_id!r} is not a fine-tuned {MODEL_ID}")
    slug = re.sub(r"[^0-9A-Za-z.-]", "_", model_id.removeprefix(MODEL_ID + FT_MARK))
    root = Path(cache_dir).expanduser() if cache_dir is not None else cache_root()
    return root / "finetuned" / f"all-MiniLM-L6-v2-ft-{slug}"


def _batches(n: int, recipe: FineTuneRecipe) -> list[np.ndarray]:
    """The shuffled triple indices of each step, every epoch (a last short batch kept if >= 2)."""
    rng = np.random.default_rng(recipe.seed)
    out = []
    for _ in range(recipe.epochs):
        order = rng.permutation(n)
        out += [order[s : s + recipe.batch_size] for s in range(0, n, recipe.batch_size)]
    return [b for b in out if len(b) >= 2]


def train(
    triples: Sequence[Triple],
    recipe: FineTuneRecipe,
    target: Path,
    *,
    log: Callable[[str], None] | None = None,
) -> TrainStats:
    """Fine-tune the bundled model on ``triples`` and save it (sentence-transformers' layout).

    Raises:
        ValueError: fewer than two triples.
    """
    if len(triples) < 2:
        raise ValueError(f"{len(triples)} training triples; at least 2 are needed")
    offline_hub()
    import torch
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    started = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(recipe.threads)
    torch.manual_seed(recipe.seed)
    try:
        model = load_sentence_transformer(quiet=True, device="cpu")
        model.max_seq_length = recipe.max_seq_length
        loss_fn = MultipleNegativesRankingLoss(model, scale=recipe.scale)
        optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.learning_rate)
        batches = _batches(len(triples), recipe)
        warm = max(1, int(recipe.warmup * len(batches)))
        sched = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warm))
        model.train()
        losses = []
        for step, rows in enumerate(batches):
            columns = [[getattr(triples[i], f) for i in rows] for f in Triple.__slots__]
            features = [model.preprocess(texts) for texts in columns]
            loss = loss_fn(features, None)
            loss.backward()
            optimizer.step()
            sched.step()
            optimizer.zero_grad()
            losses.append(float(loss.detach()))
            if log is not None and (step % 5 == 0 or step == len(batches) - 1):
                log(f"step {step + 1}/{len(batches)} loss {losses[-1]:.4f}")
        model.eval()
        model.max_seq_length = 256
        model.save(str(target))
    finally:
        torch.set_num_threads(threads)
    return TrainStats(
        len(triples), len(batches), round(time.perf_counter() - started, 1), losses[0], losses[-1]
    )


def ensure_finetuned(
    model_id: str,
    triples: Callable[[], Sequence[Triple]],
    recipe: FineTuneRecipe,
    *,
    cache_dir: str | Path | None = None,
    log: Callable[[str], None] | None = None,
) -> tuple[Path, TrainStats | None]:
    """The model's folder, trained now from ``triples()`` when it is not in the cache yet.

    Trained into a temporary folder beside the final one and renamed into place, under a lock:
    a killed training leaves no model behind, and two processes never train the same one.

    Returns:
        The folder, and the training's stats (None when the model was already there).
    """
    final = finetuned_dir(model_id, cache_dir)
    if (final / "config.json").is_file():
        return final, None
    from filelock import FileLock

    final.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(final.parent / f".{final.name}.lock")):
        if (final / "config.json").is_file():  # another process trained it meanwhile
            return final, None
        tmp = final.with_name(f".tmp-{uuid.uuid4().hex}-{final.name}")
        try:
            stats = train(triples(), recipe, tmp, log=log)
            (tmp / "convlab_finetune.json").write_text(
                json.dumps({"model_id": model_id, "recipe": asdict(recipe), **asdict(stats)})
            )
            os.replace(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        fsync_dir(final.parent)
    return final, stats


class FineTunedEmbedder(MiniLMEmbedder):
    """A fine-tuned all-MiniLM-L6-v2 from the cache (:func:`ensure_finetuned` made it).

    Args:
        model_id: the id :func:`finetuned_model_id` gave it (its folder follows from it).
        cache_dir: the cache root (default :func:`convlab.embed.onnx.cache_root`).
        **options: :class:`~convlab.embed.minilm.MiniLMEmbedder`'s (``batch_size``, ``device``).

    Raises:
        FileNotFoundError: the model is not in the cache (naming the command that makes it).
    """

    name = "minilm-ft"

    def __init__(self, model_id: str, *, cache_dir: str | Path | None = None, **options: Any):
        super().__init__(**options)
        self.path = finetuned_dir(model_id, cache_dir)
        if not (self.path / "config.json").is_file():
            raise FileNotFoundError(
                f"no fine-tuned model {model_id} at {self.path}; make it with "
                "`python -m eval.finetune_cv` (fold models) or `eval.run --embedder minilm-ft`"
            )
        self.model_id = model_id

    @property
    def model(self) -> Any:
        """The fine-tuned SentenceTransformer, loaded on first use (offline)."""
        if self._model is None:
            offline_hub()
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(self.path), device=self.device)
        return self._model
