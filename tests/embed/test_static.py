"""The static embedder: MiniLM distilled with Model2Vec, offline, into the cache.

The distillation tests use a table of four tokens, no PCA and no SIF weighting, so every row
is a value worked out by hand: MiniLM's mean-pooled output for ``[CLS] token [SEP]``, which is
also what MiniLM itself embeds for a one-token text.
"""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest

from convlab.embed import make_embedder
from convlab.embed.static import StaticEmbedder, StaticRecipe, static_model_dir

TINY = StaticRecipe(
    pca_dims=None, sif_coefficient=None, tokens=("[PAD]", "[UNK]", "hello", "world")
)


def test_a_recipe_is_named_by_its_settings() -> None:
    assert StaticRecipe().label == "pca256-sif0.0001"
    assert StaticRecipe(pca_dims=None, sif_coefficient=None).label == "nopca-nosif"
    assert TINY.label.startswith("nopca-nosif+v4-")
    with pytest.raises(ValueError, match="sif_coefficient"):
        StaticRecipe(sif_coefficient=1.5)
    with pytest.raises(ValueError, match="pca_dims"):
        StaticRecipe(pca_dims=0)


def test_the_static_embedder_is_registered_and_names_its_recipe(tmp_path: Path) -> None:
    emb = make_embedder("static", cache_dir=tmp_path)
    assert isinstance(emb, StaticEmbedder)
    assert emb.name == "static"
    assert emb.model_id == "sentence-transformers/all-MiniLM-L6-v2+static:pca256-sif0.0001"
    with pytest.raises(ValueError, match="not the static model"):
        make_embedder("static", model_id="sentence-transformers/all-MiniLM-L6-v2@onnx")
    assert static_model_dir(StaticRecipe(), tmp_path).parent == tmp_path / "static"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> StaticEmbedder:
    """The four-token table, distilled with every socket refused (nothing may be downloaded)."""
    mp = pytest.MonkeyPatch()

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("the network was reached")

    mp.setattr(socket.socket, "connect", refuse)
    try:
        emb = StaticEmbedder(TINY, cache_dir=tmp_path_factory.mktemp("static"))
        emb.encode(["hello"])  # distils now
    finally:
        mp.undo()
    return emb


def test_a_one_token_text_is_minilms_vector_of_it(tiny: StaticEmbedder, minilm) -> None:  # type: ignore[no-untyped-def]
    table = tiny._loaded()
    assert sorted(table.tokenizer.get_vocab()) == ["[PAD]", "[UNK]", "hello", "world"]
    assert tiny.dimension == 384  # no PCA: MiniLM's width
    static = tiny.encode(["hello", "world"])
    model = minilm.encode(["hello", "world"])
    assert np.allclose(static, model, atol=1e-5)


def test_a_text_is_the_normalised_sum_of_its_tokens_rows(tiny: StaticEmbedder) -> None:
    table = tiny._loaded()
    vocab = table.tokenizer.get_vocab()
    rows = np.asarray(table.embedding, dtype=np.float32)
    want = rows[vocab["hello"]] + rows[vocab["world"]] + rows[vocab["hello"]]
    want /= np.linalg.norm(want)
    got = tiny.encode(["hello world hello"])[0]
    assert np.allclose(got, want, atol=1e-6)
    assert np.allclose(np.linalg.norm(tiny.encode(["world", "hello world"]), axis=1), 1.0)


def test_distillation_is_deterministic_and_a_warm_cache_distils_nothing(
    tiny: StaticEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    again = StaticEmbedder(TINY, cache_dir=tmp_path)
    texts = ["hello", "world hello", "nothing known here"]
    assert np.array_equal(again.encode(texts), tiny.encode(texts))  # a second distillation

    import convlab.embed.static as static

    def fail(*args: object) -> None:
        raise AssertionError("distilled again")

    monkeypatch.setattr(static, "_distill", fail)
    warm = StaticEmbedder(TINY, cache_dir=tmp_path)
    assert np.array_equal(warm.encode(texts), again.encode(texts))
    assert not list((tmp_path / "static").glob(".tmp-*"))  # no temporary folder left behind
