"""``VectorIndex``: units and their vectors in FAISS, searchable, saved whole or not at all.

The kind (a name of :data:`convlab.index.kinds.INDEX_KINDS`) is chosen at build time; the kind
decides how the FAISS index is made and trained, which vectors are kept and how a query over the
whole index is answered (:class:`convlab.index.kinds.IndexKind`); this module runs the same
steps for every kind. :meth:`VectorIndex.build_from_shards` builds an index of any kind shard by
shard, at most one shard of vectors in memory (:mod:`convlab.index.shards`).

A search restricted to a subset of rows (a conversation scope, filters) is exact over that subset
with numpy, whatever the kind. ``save`` writes units (Arrow IPC, read batch by batch when loaded:
:mod:`convlab.index.unit_table`), vectors (npy), the FAISS file and a manifest into a temporary
directory beside the target, fsyncs them and renames it into place; no pickle. The manifest
(:class:`convlab.index.manifest.IndexManifest`) records the model id, the dimension, the kind
and its parameters, the strategy, the content policy, the corpus fingerprint and (when given)
the embedder's registered name (``embedder``, see :func:`convlab.embed.make_embedder`).
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import msgspec
import numpy as np
import polars as pl

from convlab._version import __version__
from convlab.atomic import fsync_dir
from convlab.index.faisslib import FaissIndex, load_faiss
from convlab.index.guard import RowGuard, check_hits
from convlab.index.kinds import INDEX_KINDS, IndexKind
from convlab.index.kinds.base import StoredVectors
from convlab.index.manifest import IndexManifest, read_manifest, write_manifest
from convlab.index.shards import ShardLoader, check_shard
from convlab.index.topk import top_into
from convlab.index.unit_table import UnitTable, write_unit_shards, write_units
from convlab.specs import IndexSpec

__all__ = ["VectorIndex"]

FLAT = IndexSpec("flat")
"""Exact inner-product search: the default index."""

IVFPQ = IndexSpec("ivfpq")
"""IVF-PQ with exact re-scoring: the default of a build shard by shard."""

_ADD_BATCH = 32_768  # rows per FAISS add from shards: its assignment table is batch x nlist float32


class VectorIndex:
    """Units (rows of :data:`convlab.schema.UNITS`) and their vectors, row i <-> vector i.

    A loaded index maps its units from disk: :meth:`unit_rows` reads the rows of some hits,
    :attr:`units` makes the whole frame (once) for the callers that need every row. An index
    opened from a store carries its :attr:`guard` (:mod:`convlab.index.guard`): every search
    checks the rows it answers from, and a damaged units file raises the guard's error.
    """

    guard: RowGuard | None = None
    """Checks the stored rows each search answers from (None: an index built in memory)."""

    def __init__(
        self,
        units: pl.DataFrame | UnitTable,
        vectors: StoredVectors,
        faiss_index: FaissIndex,
        manifest: IndexManifest,
    ) -> None:
        self._units = units if isinstance(units, UnitTable) else UnitTable(frame=units)
        self._vectors = vectors
        self._faiss = faiss_index
        self.manifest = manifest
        self.dimension = int(vectors.shape[1])
        self.guard = None

    @property
    def kind(self) -> IndexKind:
        """The index's kind, named by its manifest.

        Raises:
            ValueError: a kind that is not registered, listing the valid ones.
        """
        return INDEX_KINDS.get(self.manifest.kind)

    @classmethod
    def build(
        cls,
        units: pl.DataFrame,
        vectors: np.ndarray,
        *,
        model_id: str,
        spec: IndexSpec = FLAT,
        strategy: str | None = None,
        policy: dict[str, Any] | None = None,
        corpus_fingerprint: str | None = None,
        embedder: str | None = None,
    ) -> VectorIndex:
        """Index ``vectors`` (one per row of ``units``, L2-normalised).

        Args:
            units: the units frame; row i is vector i.
            vectors: ``(len(units), d)`` L2-normalised vectors.
            model_id: the embedding model, checked by :meth:`load`.
            spec: the index kind (a name of :data:`convlab.index.kinds.INDEX_KINDS`) and its
                parameters (``hnsw_m``, ``nprobe``, IVF-PQ fields, ...); exact search by default.
            strategy: recorded in the manifest.
            policy: recorded in the manifest.
            corpus_fingerprint: recorded in the manifest.
            embedder: the embedder's registered name, recorded in the manifest.

        Raises:
            ValueError: an unknown kind (listing the valid ones), mismatched sizes, bad
                parameters, or (a kind that needs them) vectors not of unit length.
        """
        index_kind = INDEX_KINDS.get(spec.kind)  # an unknown kind fails here, listing the valid
        origin = _Origin(model_id, strategy, policy, corpus_fingerprint, embedder)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != units.height:
            raise ValueError(
                f"{units.height} units but vectors of shape {vectors.shape}; they must match"
            )
        n, d = vectors.shape
        resolved = index_kind.resolve(spec.params, n, d)
        if index_kind.unit_norm:
            check_shard(units, vectors, d, "vectors")
        index = index_kind.make(d, n, resolved)
        if n:
            sample = index_kind.sample(resolved, n)
            if sample is not None:
                if sample.size < n:
                    sample.add(vectors)
                # a sample of every row is every row, in row order
                index.train(sample.vectors() if sample.size < n else vectors)
            index.add(vectors)
        kept = vectors.astype(index_kind.vector_dtype, copy=False)
        return cls(units, kept, index, origin.manifest(d, spec.kind, resolved, n))

    @classmethod
    def build_from_shards(
        cls,
        shards: Sequence[ShardLoader],
        directory: str | Path,
        *,
        model_id: str,
        spec: IndexSpec = IVFPQ,
        strategy: str | None = None,
        policy: dict[str, Any] | None = None,
        corpus_fingerprint: str | None = None,
        embedder: str | None = None,
    ) -> VectorIndex:
        """Build an index into ``directory`` shard by shard, then load it.

        Each shard is read up to three times (count, sample when the kind trains, add); at most
        one shard of float32 vectors is in memory at a time, the vectors the kind keeps go
        straight to the file on disk. Rows are numbered in shard order. The result equals
        :meth:`build` on the concatenated shards with the same parameters. The directory
        appears whole or not at all.

        Args:
            shards: loaders, each returning ``(units, vectors)`` (see
                :func:`convlab.index.shards.parquet_shards`).
            directory: where to write the index (replaced if it exists).
            model_id: the embedding model, checked by :meth:`load`.
            spec: the index kind and its parameters
                (:class:`convlab.index.kinds.ivfpq.IVFPQParams` fields for ``ivfpq``, the
                default).
            strategy: recorded in the manifest.
            policy: recorded in the manifest.
            corpus_fingerprint: recorded in the manifest.
            embedder: the embedder's registered name, recorded in the manifest.

        Raises:
            ValueError: an unknown kind, bad parameters, no rows, or a bad shard (naming it and
                the row).
        """
        index_kind = INDEX_KINDS.get(spec.kind)
        n, d = _counted(shards, index_kind.unit_norm)
        resolved = index_kind.resolve(spec.params, n, d)
        index = index_kind.make(d, n, resolved)
        sample = index_kind.sample(resolved, n)
        if sample is not None:
            for load in shards:
                sample.add(load()[1])
            index.train(sample.vectors())
            del sample
        origin = _Origin(model_id, strategy, policy, corpus_fingerprint, embedder)
        manifest = origin.manifest(d, spec.kind, resolved, n)

        def write(tmp: Path) -> None:
            # plain writes, not a writable memory map: the written pages stay out of our RSS
            with (tmp / "vectors.npy").open("wb") as stored:
                header = {"descr": index_kind.vector_dtype.str, "fortran_order": False}
                np.lib.format.write_array_header_1_0(stored, header | {"shape": (n, d)})
                added = _added(shards, index, index_kind, stored, n, d)
                write_unit_shards(added, tmp)  # one shard's units in memory at a time
            load_faiss().write_index(index, str(tmp / "index.faiss"))
            write_manifest(manifest, tmp)

        _write_atomically(Path(directory), write)
        return cls.load(directory, model_id=model_id)

    def __len__(self) -> int:
        return self._units.height

    @property
    def units(self) -> pl.DataFrame:
        """Every unit, as one frame (made from the mapped file on first use, then kept)."""
        try:
            return self._units.frame()
        except ValueError as exc:  # a damaged units file (pyarrow's ArrowInvalid included)
            raise self._damaged(exc) from None

    def unit_rows(
        self, rows: np.ndarray | Sequence[int], columns: Sequence[str] | None = None
    ) -> pl.DataFrame:
        """The units of these rows, in this order: only they are read from disk.

        Raises:
            IndexError: a row outside the index (``-1`` padding included: drop it first).
        """
        try:
            return self._units.rows(rows, columns)
        except IndexError:
            raise
        except (ValueError, OSError) as exc:  # a damaged units file
            raise self._damaged(exc) from None

    def _damaged(self, exc: Exception) -> Exception:
        if self.guard is None:
            return exc
        return self.guard.damaged("units.arrow", f"unreadable ({type(exc).__name__}: {exc})")

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        """The stored vectors of these rows, as float32 (their bytes checked by the guard)."""
        idx = np.asarray(rows, dtype=np.int64)
        if self.guard is not None:
            self.guard.check(idx)
        return np.asarray(self._vectors[idx], dtype=np.float32)

    def set_search(self, *, nprobe: int | None = None, rescore: int | None = None) -> None:
        """Change search-time parameters, kept in the manifest (``ivfpq``: nprobe, rescore).

        Raises:
            ValueError: a kind without these parameters (naming the kinds that have them), or
                a value below 1.
        """
        changes = {k: v for k, v in (("nprobe", nprobe), ("rescore", rescore)) if v is not None}
        wanted = {"nprobe", "rescore"}
        if not wanted <= set(self.kind.tunable):
            able = [name for name, k in INDEX_KINDS.items() if wanted <= set(k.tunable)]
            raise ValueError(
                f"set_search applies to {', '.join(able)} indexes, not {self.manifest.kind!r}"
            )
        params = self.kind.tune(self._faiss, self.manifest.params | changes)
        self.manifest = msgspec.structs.replace(self.manifest, params=params)

    def search(
        self, queries: np.ndarray, k: int, *, rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` rows by cosine similarity for each query.

        Args:
            queries: ``(m, d)`` normalised query vectors.
            k: results per query.
            rows: search only these row numbers (exact, with numpy).

        Returns:
            ``(scores, rows)``, both ``(m, k)``: float32 cosine scores and int64 row numbers,
            padded with ``-inf`` / ``-1`` when fewer than ``k`` rows exist.
        """
        q = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        if q.shape[1] != self.dimension:
            raise ValueError(f"queries have {q.shape[1]} dimensions, the index {self.dimension}")
        m = q.shape[0]
        if rows is None and len(self):
            scores, found = self.kind.search(self._faiss, self._vectors, q, k, self.manifest.params)
            if self.guard is not None:  # what the answer is read from, checked before it is given
                stored = self.vectors(np.where(found >= 0, found, 0).reshape(-1))
                stored = stored.reshape(*found.shape, self.dimension)
                check_hits(self.guard, q, scores, found, stored)
            return scores, found
        scores = np.full((m, k), -np.inf, dtype=np.float32)
        ids = np.full((m, k), -1, dtype=np.int64)
        subset = np.asarray([] if rows is None else rows, dtype=np.int64)
        if subset.size == 0:
            return scores, ids
        for j, sims in enumerate(q @ self.vectors(subset).T):
            top_into(sims, k, subset, scores[j], ids[j])
        return scores, ids

    def save(self, directory: str | Path) -> None:
        """Write the index to ``directory`` atomically (temp dir, fsync, rename)."""

        def write(tmp: Path) -> None:
            write_units(self.units, tmp)
            np.save(tmp / "vectors.npy", self._vectors, allow_pickle=False)
            load_faiss().write_index(self._faiss, str(tmp / "index.faiss"))
            write_manifest(self.manifest, tmp)

        _write_atomically(Path(directory), write)

    @classmethod
    def load(
        cls, directory: str | Path, *, model_id: str | None = None, dimension: int | None = None
    ) -> VectorIndex:
        """Read an index written by :meth:`save`.

        Raises:
            FileNotFoundError: no index there.
            ValueError: the index was built with another model or dimension than expected, by
                an older convlab (run ``convlab index --rebuild``), or is of an unknown kind.
        """
        d = Path(directory)
        manifest = read_manifest(d)
        if model_id is not None and manifest.model_id != model_id:
            raise ValueError(
                f"the index at {d} was built with model {manifest.model_id!r}, not "
                f"{model_id!r}: rebuild it with this model"
            )
        if dimension is not None and manifest.dimension != dimension:
            raise ValueError(
                f"the index at {d} has {manifest.dimension} dimensions, not {dimension}: "
                "rebuild it with this model"
            )
        kind = INDEX_KINDS.get(manifest.kind)
        vectors = kind.open_vectors(d / "vectors.npy")
        units = UnitTable.open(d)
        index = load_faiss().read_index(str(d / "index.faiss"))
        if index.ntotal != units.height or vectors.shape[0] != units.height:
            raise ValueError(f"the index at {d} is inconsistent (units, vectors, FAISS differ)")
        kind.tune(index, manifest.params)
        return cls(units, vectors, index, manifest)


def _counted(shards: Sequence[ShardLoader], unit_norm: bool) -> tuple[int, int]:
    """The rows and dimension of the shards, each checked (the first pass).

    Raises:
        ValueError: no rows, or a bad shard (naming it and the row).
    """
    n, d = 0, None
    for i, load in enumerate(shards):
        units, vecs = load()
        vecs = check_shard(units, vecs, d, f"shard {i}", unit_norm=unit_norm)
        d = vecs.shape[1]
        n += vecs.shape[0]
    if n == 0 or d is None:
        raise ValueError("the shards hold no rows; nothing to index")
    return n, d


def _added(
    shards: Sequence[ShardLoader],
    index: FaissIndex,
    kind: IndexKind,
    stored: BinaryIO,
    n: int,
    d: int,
) -> Iterator[pl.DataFrame]:
    """Add each shard to ``index``, write its kept vectors to ``stored``, yield its units.

    The last pass over the shards.

    Raises:
        ValueError: a bad shard, or shards that changed since they were counted.
    """
    offset = 0
    for i, load in enumerate(shards):
        units, vecs = load()
        vecs = check_shard(units, vecs, d, f"shard {i}", unit_norm=kind.unit_norm)
        if offset + vecs.shape[0] > n:
            raise ValueError(f"shard {i} changed between passes (more rows)")
        for a in range(0, vecs.shape[0], _ADD_BATCH):  # bounds FAISS's temporaries
            index.add(vecs[a : a + _ADD_BATCH])
        stored.write(vecs.astype(kind.vector_dtype, copy=False).tobytes())
        offset += vecs.shape[0]
        yield units
    if offset != n:
        raise ValueError(f"the shards changed between passes ({offset} rows, not {n})")


class _Origin(NamedTuple):
    """What made an index, as its manifest records it."""

    model_id: str
    strategy: str | None
    policy: dict[str, Any] | None
    corpus_fingerprint: str | None
    embedder: str | None

    def manifest(self, d: int, kind: str, params: dict[str, Any], n: int) -> IndexManifest:
        """The manifest of an index of ``n`` vectors of ``d`` dimensions of this origin."""
        return IndexManifest(
            model_id=self.model_id,
            embedder=self.embedder,
            dimension=d,
            kind=kind,
            params=params,
            strategy=self.strategy,
            policy=self.policy,
            corpus_fingerprint=self.corpus_fingerprint,
            convlab_version=__version__,
            units=n,
            created=time.time(),
        )


def _write_atomically(target: Path, write: Callable[[Path], None]) -> None:
    """Run ``write`` into a fresh temp dir beside ``target``, fsync it, rename it into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex}"
    tmp.mkdir()
    try:
        write(tmp)
        for f in tmp.iterdir():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        if target.exists():
            old = target.parent / f".{target.name}.old-{uuid.uuid4().hex}"
            os.rename(target, old)
            os.rename(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, target)
        fsync_dir(target.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
