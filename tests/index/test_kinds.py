"""Every registered index kind against exact search, and a new kind added by one class alone."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import polars as pl
import pytest

from convlab import schema
from convlab.index import INDEX_KINDS, VectorIndex
from convlab.index.kinds.base import StoredVectors, faiss_top, in_memory
from convlab.index.shards import TrainSample
from convlab.specs import IndexSpec

N, D = 1000, 48


@pytest.fixture(autouse=True)
def _one_faiss_thread() -> Iterator[None]:
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # FAISS's OpenMP threads spin on a shared machine
    yield
    faiss.omp_set_num_threads(before)


def _units(n: int, start: int = 0) -> pl.DataFrame:
    return schema.frame({"unit_id": [f"u{i}" for i in range(start, start + n)]}, schema.UNITS)


def _vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, D)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("kind", INDEX_KINDS.names())
def test_every_kind_with_its_defaults(kind: str, tmp_path: Path) -> None:
    """Built whole or from shards, saved and loaded: the same rows, close to exact search."""
    v, q = _vectors(N, seed=0), _vectors(8, seed=1)
    built = VectorIndex.build(_units(N), v, model_id="m", spec=IndexSpec(kind))
    scores, rows = built.search(q, 10)
    exact = np.argsort(-(q @ v.T), axis=1, kind="stable")[:, :10]
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(rows, exact, strict=True)])
    assert recall >= 0.9
    assert np.allclose(scores, np.take_along_axis(q @ v.T, rows, axis=1), atol=1e-2)
    built.save(tmp_path / "saved")
    back = VectorIndex.load(tmp_path / "saved", model_id="m", dimension=D)
    assert back.manifest.kind == kind
    assert np.array_equal(back.search(q, 10)[1], rows)
    shards = [lambda a=a: (_units(250, a), v[a : a + 250]) for a in range(0, N, 250)]
    sharded = VectorIndex.build_from_shards(
        shards, tmp_path / "sharded", model_id="m", spec=IndexSpec(kind)
    )
    assert sharded.manifest.params == built.manifest.params
    if kind != "hnsw":  # HNSW's graph depends on how the rows were added (in batches or whole)
        assert np.array_equal(sharded.search(q, 10)[1], rows)


class _Halves:
    """A kind written only here: exact L2 search by FAISS, vectors kept as float16 in memory."""

    vector_dtype = np.dtype(np.float16)
    unit_norm = False
    tunable = ()

    def resolve(self, params: Mapping[str, Any], n: int, d: int) -> dict[str, Any]:
        return {"rows": n}

    def make(self, d: int, n: int, params: Mapping[str, Any]) -> Any:
        return faiss.IndexFlatL2(d)

    def sample(self, params: Mapping[str, Any], n: int) -> TrainSample | None:
        return None

    def open_vectors(self, path: Path) -> StoredVectors:
        return in_memory(path)

    def tune(self, index: Any, params: Mapping[str, Any]) -> dict[str, Any]:
        return dict(params)

    def search(
        self,
        index: Any,
        vectors: StoredVectors,
        queries: np.ndarray,
        k: int,
        params: Mapping[str, Any],
    ) -> tuple[np.ndarray, np.ndarray]:
        distances, rows = faiss_top(index, queries, k)
        return 1 - distances / 2, rows  # unit vectors: |a - b|^2 = 2 - 2 cos


def test_a_new_kind_is_one_class(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Registering one class is all a new kind takes: VectorIndex builds, searches, saves and
    loads it without naming it."""
    monkeypatch.setitem(INDEX_KINDS._items, "halves", _Halves())
    s = 1 / math.sqrt(2)
    v = np.array([[1, 0], [0, 1], [s, s]], dtype=np.float32)
    ix = VectorIndex.build(_units(3), v, model_id="m", spec=IndexSpec("halves"))
    # query e1: cos 1 with row 0, 1/sqrt(2) with row 2, 0 with row 1; a fourth place is padding
    scores, rows = ix.search(np.array([[1, 0]], dtype=np.float32), 4)
    assert rows.tolist() == [[0, 2, 1, -1]]
    assert scores[0, :3] == pytest.approx([1.0, s, 0.0], abs=1e-6)
    assert ix.manifest.params == {"rows": 3}
    assert ix.vectors(np.array([2])).tolist() == [[np.float16(s), np.float16(s)]]
    ix.save(tmp_path / "ix")
    back = VectorIndex.load(tmp_path / "ix")
    assert np.load(tmp_path / "ix" / "vectors.npy").dtype == np.float16
    assert back.search(np.array([[0, 1]], dtype=np.float32), 1)[1].tolist() == [[1]]
    with pytest.raises(ValueError, match="set_search applies to ivfpq indexes, not 'halves'"):
        back.set_search(nprobe=2)
