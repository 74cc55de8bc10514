"""The embedding cache: a text embedded once, by any strategy or any earlier run, is never again.

:class:`CachedEmbedder` wraps any embedder with a disk cache keyed by (model id, sha256 of the
text). The cache is a folder of immutable segment files (a structured ``.npy`` of 32-byte keys and
vectors, no pickle), each written to a temporary name and renamed into place, with the sha256 of
its bytes in its name: a killed run leaves only whole segments (and an ignored temporary file), and
a segment whose bytes do not match its name is reported, deleted and its texts embedded again.
Segments are flushed as batches of :data:`SEGMENT_TEXTS` texts finish, so a run killed during a
long first index keeps everything embedded before the batch in flight. The texts to embed are
one ``embed`` phase of the progress display in use (:mod:`convlab.progress`), across segments.

:func:`embed_texts` embeds each distinct text of a list once (the local engine's whole job).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from filelock import FileLock

from convlab.atomic import fsync_dir
from convlab.embed.device import device_of
from convlab.embed.late import Span, encode_passes, pass_keys
from convlab.progress import current as current_progress
from convlab.protocols import Embedder

__all__ = ["SEGMENT_TEXTS", "CacheDamaged", "CachedEmbedder", "EmbedStats", "embed_texts"]


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
        self.name: str | None = getattr(inner, "name", None)
        # where the vectors embedded last were made: provenance, never part of a key
        self.device = device_of(inner)
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
            data = _read_segment(path)
            try:
                if hashlib.sha256(data).hexdigest() != m.group(1):
                    raise ValueError("checksum mismatch")
                rec = np.load(io.BytesIO(data), allow_pickle=False)
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
        try:
            with tmp.open("wb") as fh:
                np.save(fh, rec, allow_pickle=False)
                fh.flush()
                os.fsync(fh.fileno())
            digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
            final = self.directory / f"seg-{uuid.uuid4().hex}-{digest}.npy"
            os.replace(tmp, final)
        except BaseException:  # a full disk: give the space back (clean() would, later)
            tmp.unlink(missing_ok=True)
            raise
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
            with self._lock():
                self._load()  # another process may have embedded them meanwhile
                missing = [k for k in missing if k not in self._keys]
                if len(missing) > per_segment:  # one order for every batch: less padding
                    missing.sort(key=lambda k: -len(distinct[k]))
                progress = current_progress()
                if missing:  # one phase over every segment: one bar, not one per segment
                    progress.phase("embed", total=len(missing))
                for start in range(0, len(missing), per_segment):
                    batch = missing[start : start + per_segment]
                    self._embed_segment(inner, batch, distinct)
                    # the inner embedder may have advanced batch by batch already
                    progress.advance(start + len(batch) - progress.done)
        self.stats.from_cache += len(distinct) - len(missing)
        rows = np.fromiter((self._keys[k] for k in keys), dtype=np.int64, count=len(keys))
        return self._vectors[rows]

    def encode_passes(
        self, texts: Sequence[str], spans: Sequence[Sequence[Span]], max_tokens: int
    ) -> list[np.ndarray]:
        """Late chunking's span means per pass (:func:`convlab.embed.late.encode_passes`), cached.

        The cache keys each span mean by the pass's text and the span (and, as every entry, by
        the model id and backend of its folder): a pass seen before, by any strategy or run, is
        not run again. The passes to run go to the inner embedder in batches of
        :attr:`segment_texts`, each written as a segment before the next.
        """
        keys = [pass_keys(t, s) for t, s in zip(texts, spans, strict=True)]
        self.stats.requested += len(texts)
        todo = {ks[0]: i for i, ks in enumerate(keys) if ks and ks[-1] not in self._keys}
        self.stats.distinct += len({ks[0] for ks in keys if ks})
        if todo:
            with self._lock():
                self._load()
                todo = {k: i for k, i in todo.items() if keys[i][-1] not in self._keys}
                order = sorted(todo.values(), key=lambda i: -len(texts[i]))
                for start in range(0, len(order), self.segment_texts):
                    batch = order[start : start + self.segment_texts]
                    means = encode_passes(
                        self.inner, [texts[i] for i in batch], [spans[i] for i in batch], max_tokens
                    )
                    self.stats.model_calls += 1
                    self.stats.embedded += len(batch)
                    self._add([k for i in batch for k in keys[i]], np.vstack(means))
        self.stats.from_cache += len({ks[0] for ks in keys if ks}) - len(todo)
        return [self._vectors[[self._keys[k] for k in ks]] for ks in keys]

    def _add(self, keys: list[bytes], vecs: np.ndarray) -> None:
        """Write ``vecs`` under ``keys`` as one segment, then hold them in memory."""
        vecs = np.asarray(vecs, dtype=np.float32).reshape(len(keys), self.dimension)
        self._write_segment(keys, vecs)
        base = len(self._vectors)
        for i, k in enumerate(keys):
            self._keys.setdefault(k, base + i)
        self._vectors = np.vstack([self._vectors, vecs])

    def _embed_segment(self, inner: Embedder, keys: list[bytes], texts: dict[bytes, str]) -> None:
        """Embed one batch with ``inner`` and flush it to disk as a segment before returning."""
        vecs = np.asarray(inner.encode([texts[k] for k in keys]), dtype=np.float32)
        self.device = device_of(inner)  # an engine's stand-in knows where its job ran
        self.stats.model_calls += 1
        self.stats.embedded += len(keys)
        self._add(keys, vecs)

    def _lock(self) -> FileLock:
        """The cache's write lock, refused when its file is a FIFO or a device."""
        from convlab.files import check

        path = self.directory / ".lock"
        if os.path.lexists(path) and (problem := check(path)) is not None:
            raise CacheDamaged(f"{path}: {problem}; remove it (no convlab process holds it)")
        return FileLock(str(path))

    def clean(self) -> int:
        """Remove temporary files left by killed runs; returns how many.

        Taken under the cache's lock, so a segment another process is writing now is left alone.
        """
        n = 0
        with self._lock():
            for p in self.directory.glob(".tmp-*"):
                if p.is_dir() and not p.is_symlink():
                    continue  # not a segment's
                p.unlink(missing_ok=True)
                n += 1
        return n


class CacheDamaged(RuntimeError):
    """A file of the embedding cache is not a regular file (a FIFO, a device): never opened."""


def _read_segment(path: Path) -> bytes:
    """A segment's bytes, opened as a regular file only (a FIFO would block, /dev/zero never end).

    Raises:
        CacheDamaged: one line naming the segment and saying to remove it.
    """
    from convlab.errors import LoadError
    from convlab.files import read_regular

    try:
        return read_regular(path)
    except LoadError as exc:
        raise CacheDamaged(
            f"embedding cache segment {path}: {exc.reason}; remove it (its texts are embedded "
            "again)"
        ) from None


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
        >>> from convlab.embed import HashEmbedder
        >>> embed_texts(["a b", "a b", "c"], HashEmbedder(8)).shape
        (3, 8)
    """
    if len(texts) == 0:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    uniq: dict[str, int] = {}
    idx = np.fromiter((uniq.setdefault(t, len(uniq)) for t in texts), np.int64, len(texts))
    vecs = (encode or embedder.encode)(list(uniq))
    return np.asarray(vecs, dtype=np.float32)[idx]
