"""The one build recipe (issue 12): ``build_index`` with kept units (the store's incremental
update), with chunks made once for several strategies (evaluation), BM25 over the same rows, and
the switches for BM25-only and dense-only systems.

On the code before (commit 27e5fc6) these failed: ``build_index`` took no ``keep``, ``chunks``,
``dense`` or ``lexical`` and its result had no ``bm25``, ``turns`` or ``chunks``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import convlab.pipeline.chunks as chunks_module
from convlab.build import build_index, derive
from convlab.built import Embedded, Given
from convlab.embed import CachedEmbedder, HashEmbedder, embed_texts
from convlab.index.bm25 import BM25Index
from convlab.pipeline.policy import ContentPolicy
from convlab.specs import UnitSpec
from convlab.store.update import load_empty
from tests.helpers import CountingHash, corpus

CORPUS = corpus(
    {
        "a": [("user", "How do I rotate the nginx logs?"), ("assistant", "Use logrotate daily.")],
        "b": [("user", "Why is the cache cold?"), ("assistant", "The deploy wiped it.")],
    }
)


def test_kept_units_come_first_and_only_the_new_corpus_is_embedded(tmp_path: Path) -> None:
    whole = build_index(CORPUS, "isolated", embedder=HashEmbedder(16), cache_dir=tmp_path / "w")
    # isolated over two one-turn conversations: one unit per message, a's first
    assert whole.units.select("unit_id", "text").rows() == [
        ("isolated:a:t0:user:s0", "How do I rotate the nginx logs?"),
        ("isolated:a:t0:assistant:s0", "Use logrotate daily."),
        ("isolated:b:t0:user:s0", "Why is the cache cold?"),
        ("isolated:b:t0:assistant:s0", "The deploy wiped it."),
    ]
    kept = Embedded(whole.units.head(2), whole.vectors[:2])
    emb = CountingHash(16)
    step = build_index(
        CORPUS.filter_conversations({"b"}),
        "isolated",
        embedder=emb,
        cache_dir=tmp_path / "s",
        keep=kept,
    )
    assert step.units.equals(whole.units)
    assert np.array_equal(step.vectors, whole.vectors)
    # only b's two texts reached the model
    assert sorted(emb.seen) == ["The deploy wiped it.", "Why is the cache cold?"]
    assert step.manifest.embedding["embedded"] == 2
    assert step.manifest.counts.kept_units == 2
    assert step.manifest.counts.units == 4
    assert step.manifest.counts.conversations == 1
    assert len(step.index) == 4
    assert step.bm25 is not None
    assert step.bm25.n == 4
    # BM25 over all four rows: "logrotate" is only in a's assistant unit (row 1)
    scores = step.bm25.scores("logrotate")
    assert np.flatnonzero(scores).tolist() == [1]


def test_a_unit_kept_and_built_again_is_refused(tmp_path: Path) -> None:
    whole = build_index(CORPUS, "turn_pair", embedder=HashEmbedder(16), cache_dir=tmp_path)
    with pytest.raises(RuntimeError, match="duplicate unit ids between the kept and the new"):
        build_index(
            CORPUS,
            "turn_pair",
            embedder=HashEmbedder(16),
            cache_dir=tmp_path,
            keep=Embedded(whole.units, whole.vectors),
        )
    with pytest.raises(ValueError, match="keep has 4 units but 3 vectors"):
        build_index(
            load_empty(),
            "turn_pair",
            embedder=HashEmbedder(16),
            cache_dir=tmp_path,
            keep=Embedded(whole.units, whole.vectors[:3]),
        )


def test_chunks_made_once_serve_every_strategy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = ContentPolicy()
    first = build_index(CORPUS, "isolated", embedder=HashEmbedder(16), cache_dir=tmp_path)

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("chunked again")

    monkeypatch.setattr(chunks_module, "chunks", refuse)
    second = build_index(
        CORPUS,
        UnitSpec("turn_pair", policy=policy),
        embedder=HashEmbedder(16),
        cache_dir=tmp_path,
        given=Given(chunks=first.chunks),
    )
    assert second.chunks is first.chunks
    assert second.units.height == 4
    assert derive(CORPUS, "message", chunks=first.chunks).units.height == 4


def test_bm25_only_and_dense_only_builds(tmp_path: Path) -> None:
    emb = CachedEmbedder(CountingHash(16), tmp_path)
    lexical = build_index(CORPUS, "turn_pair", embedder=emb, dense=False)
    assert emb.inner.seen == []  # type: ignore[attr-defined]
    assert lexical.vectors.shape == (4, 16)
    assert not lexical.vectors.any()
    assert lexical.bm25 is not None
    assert lexical.manifest.dense is False
    dense = build_index(CORPUS, "turn_pair", embedder=emb, lexical=False)
    assert dense.bm25 is None
    assert dense.manifest.bm25 is False
    np.testing.assert_allclose(
        dense.vectors, embed_texts(dense.units["text"].to_list(), HashEmbedder(16))
    )


def test_an_empty_corpus_builds_an_empty_index_without_bm25(tmp_path: Path) -> None:
    built = build_index(load_empty(), "turn_pair", embedder=HashEmbedder(16), cache_dir=tmp_path)
    assert built.units.height == 0 == len(built.index)
    assert built.vectors.shape == (0, 16)
    assert built.bm25 is None


def test_bm25_of_the_build_equals_one_built_from_its_units(tmp_path: Path) -> None:
    built = build_index(CORPUS, "turn_pair", embedder=HashEmbedder(16), cache_dir=tmp_path)
    assert built.bm25 is not None
    ref = BM25Index.build(built.units)
    for q in ("nginx logs", "cold cache deploy"):
        assert np.array_equal(built.bm25.scores(q), ref.scores(q))


def test_vectors_computed_beforehand_are_used_as_given(tmp_path: Path) -> None:
    emb = CountingHash(16)
    texts = derive(CORPUS, "message").units["text"].to_list()
    given = embed_texts(texts, HashEmbedder(16))[::-1].copy()  # any unit-length rows will do
    built = build_index(
        CORPUS, "message", embedder=emb, cache_dir=tmp_path, given=Given(vectors=given)
    )
    assert emb.texts == 0
    assert np.array_equal(built.vectors, given)
    assert built.manifest.embedding == {}
    with pytest.raises(RuntimeError, match=r"vectors of shape \(3, 16\) for 4 units of 16 dims"):
        build_index(
            CORPUS, "message", embedder=emb, cache_dir=tmp_path, given=Given(vectors=given[:3])
        )
