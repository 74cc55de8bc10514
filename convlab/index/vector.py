"""``VectorIndex``: units and their vectors in FAISS, searchable, saved whole or not at all.

The kind (a name of :data:`convlab.index.kinds.INDEX_KINDS`) is chosen at build time. ``flat``
queries are answered by one BLAS matrix product over the stored vectors plus a partial sort:
exact search is bound by memory bandwidth, and on this project's machines FAISS's single-query
flat path measured about 2x slower than that product (eval/bench_search.py records both); the
FAISS index is kept for saving and for tools that read FAISS files. ``ivfpq`` is built shard by
shard with :meth:`VectorIndex.build_from_shards` (:mod:`convlab.index.ivfpq`).

A search restricted to a subset of rows (a conversation scope, filters) is exact over that subset
with numpy, whatever the kind. ``save`` writes units (Arrow IPC, memory-mapped when loaded:
:mod:`convlab.index.unit_table`), vectors (npy), the FAISS file and a manifest into a temporary
directory beside the target, fsyncs them and renames it into place; no pickle. The manifest
records the model id, the dimension, the kind and its parameters, the strategy, the content
policy, the corpus fingerprint and (when given) the embedder's registered name (``embedder``,
see :func:`convlab.embed.make_embedder`).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from convlab._version import __version__
from convlab.atomic import fsync_dir
from convlab.files import CONFIG, read_text_regular
from convlab.index.disk_rows import DiskRows
from convlab.index.faisslib import FaissIndex, load_faiss
from convlab.index.ivfpq import (
    IVFPQParams,
    ShardLoader,
    TrainSample,
    check_shard,
    make_ivfpq,
    rescore_into,
    set_nprobe,
)
from convlab.index.kinds import INDEX_KINDS
from convlab.index.unit_table import UnitTable, write_unit_shards, write_units

__all__ = ["VectorIndex"]

_ADD_BATCH = 32_768  # rows per FAISS add: its assignment table is batch x nlist float32


def _top_into(
    sims: np.ndarray, k: int, subset: np.ndarray | None, scores: np.ndarray, ids: np.ndarray
) -> None:
    """Write the ``k`` best of one query's similarities into ``scores`` / ``ids`` (padded rows).

    ``subset`` maps positions in ``sims`` to row numbers (None: positions are rows).
    """
    kk = min(k, sims.shape[0])
    top = np.argpartition(-sims, kk - 1)[:kk] if kk < sims.shape[0] else np.arange(kk)
    top = top[np.argsort(-sims[top], kind="stable")]
    scores[:kk] = sims[top]
    ids[:kk] = top if subset is None else subset[top]


class VectorIndex:
    """Units (rows of :data:`convlab.schema.UNITS`) and their vectors, row i <-> vector i.

    A loaded index maps its units from disk: :meth:`unit_rows` reads the rows of some hits,
    :attr:`units` makes the whole frame (once) for the callers that need every row.
    """

    def __init__(
        self,
        units: pl.DataFrame | UnitTable,
        vectors: np.ndarray | DiskRows,
        faiss_index: FaissIndex,
        manifest: dict[str, Any],
    ) -> None:
        self._units = units if isinstance(units, UnitTable) else UnitTable(frame=units)
        self._vectors = vectors
        self._faiss = faiss_index
        self.manifest = manifest
        self.dimension = int(vectors.shape[1])

    @classmethod
    def build(
        cls,
        units: pl.DataFrame,
        vectors: np.ndarray,
        *,
        model_id: str,
        kind: str = "flat",
        strategy: str | None = None,
        policy: dict[str, Any] | None = None,
        corpus_fingerprint: str | None = None,
        embedder: str | None = None,
        **params: Any,
    ) -> VectorIndex:
        """Index ``vectors`` (one per row of ``units``, L2-normalised).

        Args:
            units: the units frame; row i is vector i.
            vectors: ``(len(units), d)`` L2-normalised vectors.
            model_id: the embedding model, checked by :meth:`load`.
            kind: a name of :data:`convlab.index.kinds.INDEX_KINDS`.
            strategy: recorded in the manifest.
            policy: recorded in the manifest.
            corpus_fingerprint: recorded in the manifest.
            embedder: the embedder's registered name, recorded in the manifest.
            **params: the kind's parameters (``hnsw_m``, ``nprobe``, IVF-PQ fields, ...).

        Raises:
            ValueError: an unknown kind (listing the valid ones) or mismatched sizes.
        """
        make_index = INDEX_KINDS.get(kind)  # an unknown kind fails here, listing the valid ones
        origin = _Origin(model_id, strategy, policy, corpus_fingerprint, embedder)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != units.height:
            raise ValueError(
                f"{units.height} units but vectors of shape {vectors.shape}; they must match"
            )
        n, d = vectors.shape
        if kind == "ivfpq":
            resolved = IVFPQParams.from_dict(params).resolved(n, d)
            check_shard(units, vectors, d, "vectors")
            index = make_ivfpq(d, resolved)
            sample = TrainSample(int(resolved.train_size or n), seed=resolved.seed)
            sample.add(vectors)
            index.train(sample.vectors())
            index.add(vectors)
            return cls(
                units,
                vectors.astype(np.float16),
                index,
                origin.manifest(d, kind, asdict(resolved), n),
            )
        index = make_index(d, n, params)
        if n:
            if kind == "ivf":
                index.train(vectors)
            index.add(vectors)
        return cls(units, vectors, index, origin.manifest(d, kind, params, n))

    @classmethod
    def build_from_shards(
        cls,
        shards: Sequence[ShardLoader],
        directory: str | Path,
        *,
        model_id: str,
        strategy: str | None = None,
        policy: dict[str, Any] | None = None,
        corpus_fingerprint: str | None = None,
        embedder: str | None = None,
        **params: Any,
    ) -> VectorIndex:
        """Build an ``ivfpq`` index into ``directory`` shard by shard, then load it.

        Each shard is read three times (count, sample, add); at most one shard of float32
        vectors is in memory at a time, the float16 vectors go straight to the file on disk.
        Rows are numbered in shard order. The result equals :meth:`build` on the concatenated
        shards with the same parameters. The directory appears whole or not at all.

        Args:
            shards: loaders, each returning ``(units, vectors)`` (see
                :func:`convlab.index.ivfpq.parquet_shards`).
            directory: where to write the index (replaced if it exists).
            model_id: the embedding model, checked by :meth:`load`.
            strategy: recorded in the manifest.
            policy: recorded in the manifest.
            corpus_fingerprint: recorded in the manifest.
            embedder: the embedder's registered name, recorded in the manifest.
            **params: :class:`convlab.index.ivfpq.IVFPQParams` fields.

        Raises:
            ValueError: bad parameters, no rows, or a bad shard (naming it and the row).
        """
        base = IVFPQParams.from_dict(params)
        n, d = 0, None
        for i, load in enumerate(shards):
            units, vecs = load()
            vecs = check_shard(units, vecs, d, f"shard {i}")
            d = vecs.shape[1]
            n += vecs.shape[0]
        if n == 0 or d is None:
            raise ValueError("the shards hold no rows; nothing to index")
        resolved = base.resolved(n, d)
        sample = TrainSample(int(resolved.train_size or n), seed=resolved.seed)
        for load in shards:
            sample.add(load()[1])
        index = make_ivfpq(d, resolved)
        index.train(sample.vectors())
        del sample

        def write(tmp: Path) -> None:
            # plain writes, not a writable memory map: the written pages stay out of our RSS
            stored = (tmp / "vectors.npy").open("wb")

            def added() -> Iterator[pl.DataFrame]:
                """Each shard added and its vectors stored; its units, written as they come."""
                offset = 0
                for i, load in enumerate(shards):
                    units, vecs = load()
                    vecs = check_shard(units, vecs, d, f"shard {i}")
                    if offset + vecs.shape[0] > n:
                        raise ValueError(f"shard {i} changed between passes (more rows)")
                    for a in range(0, vecs.shape[0], _ADD_BATCH):  # bounds FAISS's temporaries
                        index.add(vecs[a : a + _ADD_BATCH])
                    stored.write(vecs.astype(np.float16).tobytes())
                    offset += vecs.shape[0]
                    yield units
                if offset != n:
                    raise ValueError(f"the shards changed between passes ({offset} rows, not {n})")

            with stored:
                header = {"descr": np.dtype(np.float16).str, "fortran_order": False}
                np.lib.format.write_array_header_1_0(stored, header | {"shape": (n, d)})
                write_unit_shards(added(), tmp)  # one shard's units in memory at a time
            load_faiss().write_index(index, str(tmp / "index.faiss"))
            origin = _Origin(model_id, strategy, policy, corpus_fingerprint, embedder)
            manifest = origin.manifest(d, "ivfpq", asdict(resolved), n)
            (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, default=str))

        _write_atomically(Path(directory), write)
        return cls.load(directory, model_id=model_id)

    def __len__(self) -> int:
        return self._units.height

    @property
    def units(self) -> pl.DataFrame:
        """Every unit, as one frame (made from the mapped file on first use, then kept)."""
        return self._units.frame()

    def unit_rows(
        self, rows: np.ndarray | Sequence[int], columns: Sequence[str] | None = None
    ) -> pl.DataFrame:
        """The units of these rows, in this order: only they are read from disk.

        Raises:
            IndexError: a row outside the index (``-1`` padding included: drop it first).
        """
        return self._units.rows(rows, columns)

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        """The stored vectors of these rows, as float32."""
        return np.asarray(self._vectors[np.asarray(rows, dtype=np.int64)], dtype=np.float32)

    def set_search(self, *, nprobe: int | None = None, rescore: int | None = None) -> None:
        """Change an ``ivfpq`` index's ``nprobe`` and re-scoring factor (kept in the manifest).

        Raises:
            ValueError: not an ``ivfpq`` index, or a value below 1.
        """
        if self.manifest.get("kind") != "ivfpq":
            raise ValueError(
                f"set_search applies to ivfpq indexes, not {self.manifest.get('kind')!r}"
            )
        params = dict(self.manifest["params"])
        params.update(
            {k: v for k, v in (("nprobe", nprobe), ("rescore", rescore)) if v is not None}
        )
        checked = IVFPQParams.from_dict(params)
        set_nprobe(self._faiss, checked.nprobe)
        self.manifest["params"] = asdict(checked)

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
        scores = np.full((m, k), -np.inf, dtype=np.float32)
        ids = np.full((m, k), -1, dtype=np.int64)
        if (
            rows is None
            and isinstance(self._vectors, np.ndarray)
            and self.manifest.get("kind") == "flat"
        ):
            # the whole index: one product, no subset bookkeeping (the hot path of exact search)
            if len(self) == 0:
                return scores, ids
            if m == 1:  # matrix-vector (gemv), as a plain numpy scan does
                _top_into(self._vectors @ q[0], k, None, scores[0], ids[0])
            else:
                for j, sims in enumerate(q @ self._vectors.T):
                    _top_into(sims, k, None, scores[j], ids[j])
            return scores, ids
        if rows is not None:
            subset = np.asarray(rows, dtype=np.int64)
            if subset.size == 0:
                return scores, ids
            for j, sims in enumerate(q @ self.vectors(subset).T):
                _top_into(sims, k, subset, scores[j], ids[j])
            return scores, ids
        if len(self) == 0:
            return scores, ids
        if self.manifest.get("kind") == "ivfpq":
            pool = min(k * int(self.manifest["params"]["rescore"]), len(self))
            candidates = self._faiss.search(q, pool)[1]
            for j in range(m):
                sims, cand = rescore_into(self._vectors, q[j], candidates[j])
                if cand.size:
                    _top_into(sims, k, cand, scores[j], ids[j])
            return scores, ids
        s, i = self._faiss.search(q, min(k, len(self)))
        scores[:, : s.shape[1]] = s
        ids[:, : i.shape[1]] = i
        ids[ids < 0] = -1
        return scores, ids

    def save(self, directory: str | Path) -> None:
        """Write the index to ``directory`` atomically (temp dir, fsync, rename)."""

        def write(tmp: Path) -> None:
            write_units(self.units, tmp)
            np.save(tmp / "vectors.npy", self._vectors, allow_pickle=False)
            load_faiss().write_index(self._faiss, str(tmp / "index.faiss"))
            (tmp / "manifest.json").write_text(json.dumps(self.manifest, indent=1, default=str))

        _write_atomically(Path(directory), write)

    @classmethod
    def load(
        cls, directory: str | Path, *, model_id: str | None = None, dimension: int | None = None
    ) -> VectorIndex:
        """Read an index written by :meth:`save`.

        Raises:
            FileNotFoundError: no index there.
            ValueError: the index was built with another model or dimension than expected.
        """
        d = Path(directory)
        mpath = d / "manifest.json"
        if not mpath.is_file():
            raise FileNotFoundError(f"no convlab index at {d} (manifest.json missing)")
        manifest = json.loads(read_text_regular(mpath, limit=CONFIG))
        if model_id is not None and manifest["model_id"] != model_id:
            raise ValueError(
                f"the index at {d} was built with model {manifest['model_id']!r}, not "
                f"{model_id!r}: rebuild it with this model"
            )
        if dimension is not None and manifest["dimension"] != dimension:
            raise ValueError(
                f"the index at {d} has {manifest['dimension']} dimensions, not {dimension}: "
                "rebuild it with this model"
            )
        # ivfpq keeps its float16 vectors on disk, read row by row (not mapped: see
        # convlab.index.disk_rows); the other kinds load them into memory
        vectors: np.ndarray | DiskRows
        if manifest.get("kind") == "ivfpq":
            vectors = DiskRows(d / "vectors.npy")
        else:
            vectors = np.load(d / "vectors.npy", allow_pickle=False)
        units = UnitTable.open(d)
        index = load_faiss().read_index(str(d / "index.faiss"))
        if index.ntotal != units.height or vectors.shape[0] != units.height:
            raise ValueError(f"the index at {d} is inconsistent (units, vectors, FAISS differ)")
        if manifest.get("kind") == "ivfpq":
            set_nprobe(index, int(manifest["params"]["nprobe"]))
        return cls(units, vectors, index, manifest)


class _Origin(NamedTuple):
    """What made an index, as its manifest records it."""

    model_id: str
    strategy: str | None
    policy: dict[str, Any] | None
    corpus_fingerprint: str | None
    embedder: str | None

    def manifest(self, d: int, kind: str, params: dict[str, Any], n: int) -> dict[str, Any]:
        """The manifest of an index of ``n`` vectors of ``d`` dimensions of this origin."""
        return {
            "model_id": self.model_id,
            "embedder": self.embedder,
            "dimension": d,
            "kind": kind,
            "params": params,
            "strategy": self.strategy,
            "policy": self.policy,
            "corpus_fingerprint": self.corpus_fingerprint,
            "convlab_version": __version__,
            "units": n,
            "created": time.time(),
        }


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
