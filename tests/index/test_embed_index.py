"""Embedders, the cache, and FAISS against numpy brute force."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from convlab import schema
from convlab.embed import CachedEmbedder, HashEmbedder, MiniLMEmbedder, embed_texts
from convlab.index import VectorIndex
from convlab.specs import IndexSpec


class Counting(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(16)
        self.texts: list[str] = []

    def encode(self, texts):  # type: ignore[no-untyped-def]
        self.texts.extend(texts)
        return super().encode(texts)


def test_hash_embedder_normalised_and_lexical() -> None:
    v = HashEmbedder(64).encode(["fix login bug", "login bug fix", "banana bread recipe"])
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0)
    assert v[0] @ v[1] == pytest.approx(1.0)
    assert v[0] @ v[2] < 0.9


def test_embed_texts_embeds_each_distinct_text_once() -> None:
    e = Counting()
    out = embed_texts(["a b", "c", "a b", "c", "d"], e)
    assert e.texts == ["a b", "c", "d"]
    assert np.array_equal(out[0], out[2])


def test_cache_second_run_embeds_nothing(tmp_path: Path) -> None:
    e = Counting()
    c1 = CachedEmbedder(e, tmp_path)
    first = c1.encode(["x y", "z", "x y"])
    assert e.texts == ["x y", "z"]
    c1.encode(["z", "w"])
    assert e.texts == ["x y", "z", "w"]
    e.texts.clear()
    c2 = CachedEmbedder(e, tmp_path)  # a later run
    again = c2.encode(["x y", "z", "w"])
    assert e.texts == []
    assert np.array_equal(again[:2], first[[0, 1]])
    assert c2.stats.embedded == 0
    assert c2.stats.from_cache == 3


def test_corrupted_segment_is_detected_and_rebuilt(tmp_path: Path) -> None:
    e = Counting()
    CachedEmbedder(e, tmp_path).encode(["one", "two"])
    seg = next((tmp_path / "hash-16-16").glob("seg-*.npy"))
    data = bytearray(seg.read_bytes())
    data[-3] ^= 0xFF
    seg.write_bytes(bytes(data))
    (tmp_path / "hash-16-16" / ".tmp-killed.npy").write_bytes(b"half written")
    e.texts.clear()
    with pytest.warns(UserWarning, match="corrupted"):
        c = CachedEmbedder(e, tmp_path)
    out = c.encode(["one", "two"])
    assert e.texts == ["one", "two"]  # re-embedded, not trusted
    assert np.allclose(out, HashEmbedder(16).encode(["one", "two"]))
    assert c.clean() == 1


def _units(n: int) -> pl.DataFrame:
    return schema.frame(
        [
            {
                "unit_id": f"u{i}",
                "strategy": "isolated",
                "conversation_id": f"c{i % 3}",
                "turn_index": i,
                "message_index": i,
                "doc_ids": [f"c{i % 3}:t{i}"],
                "text": f"t{i}",
                "n_tokens": 3,
                "chunk_ids": [f"k{i}"],
            }
            for i in range(n)
        ],
        schema.UNITS,
    )


def _vectors(n: int, d: int = 32, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize(
    ("kind", "params"),
    [("flat", {}), ("hnsw", {"ef_search": 256}), ("ivf", {"nlist": 8, "nprobe": 8})],
)
def test_search_against_numpy(kind: str, params: dict) -> None:
    v, q = _vectors(500), _vectors(5, seed=1)
    idx = VectorIndex.build(_units(500), v, model_id="m", spec=IndexSpec(kind, params))
    scores, rows = idx.search(q, 10)
    truth = np.argsort(-(q @ v.T), axis=1)[:, :10]
    overlap = np.mean([len(set(rows[i]) & set(truth[i])) / 10 for i in range(5)])
    assert overlap >= (1.0 if kind == "flat" else 0.9)
    if kind == "flat":
        assert np.allclose(scores, np.take_along_axis(q @ v.T, truth, axis=1), atol=1e-5)


def test_subset_search_and_padding() -> None:
    v, q = _vectors(100), _vectors(2, seed=3)
    idx = VectorIndex.build(_units(100), v, model_id="m")
    subset = np.array([3, 7, 11, 50])
    _scores, rows = idx.search(q, 6, rows=subset)
    assert set(rows[0][:4]) == set(subset.tolist())
    assert rows[0][4:].tolist() == [-1, -1]
    best = subset[np.argmax(q[0] @ v[subset].T)]
    assert rows[0][0] == best


def test_save_load_roundtrip_and_refusals(tmp_path: Path) -> None:
    v = _vectors(20)
    idx = VectorIndex.build(_units(20), v, model_id="model-a", strategy="isolated")
    idx.save(tmp_path / "ix")
    idx.save(tmp_path / "ix")  # overwriting is atomic too
    back = VectorIndex.load(tmp_path / "ix", model_id="model-a", dimension=32)
    assert back.units.equals(idx.units)
    assert np.array_equal(back.vectors(np.arange(20)), v)
    assert back.manifest.strategy == "isolated"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    with pytest.raises(ValueError, match="built with model 'model-a', not 'model-b'"):
        VectorIndex.load(tmp_path / "ix", model_id="model-b")
    with pytest.raises(ValueError, match="has 32 dimensions, not 384"):
        VectorIndex.load(tmp_path / "ix", dimension=384)
    with pytest.raises(ValueError, match="unknown index kind"):
        VectorIndex.build(_units(20), v, model_id="m", spec=IndexSpec("lsh"))


@pytest.mark.model
def test_real_model(minilm: MiniLMEmbedder) -> None:
    v = minilm.encode(
        [
            "How do I fix the login bug?",
            "the authentication error when signing in",
            "a recipe for banana bread",
        ]
    )
    assert v.shape == (3, 384)
    assert v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
    # order of inputs does not change the vectors (length sorting is undone)
    w = minilm.encode(["a recipe for banana bread", "How do I fix the login bug?"])
    assert np.allclose(w[1], v[0], atol=1e-5)
