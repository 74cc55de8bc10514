"""Embedders and index kinds by name: the registries, make_embedder, the manifest's embedder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from convlab.embed import (
    EMBEDDERS,
    CachedEmbedder,
    HashEmbedder,
    MiniLMEmbedder,
    embedder_name,
    make_embedder,
)
from convlab.embed.onnx import OnnxEmbedder
from convlab.extras import missing_extra, require
from convlab.index import INDEX_KINDS, VectorIndex
from convlab.model import MODEL_ID
from convlab.specs import IndexSpec


def test_embedders_are_picked_by_name() -> None:
    assert EMBEDDERS.names() == ("hash", "minilm", "minilm-ft", "static")
    assert make_embedder("hash").model_id == "hash-64"
    assert isinstance(make_embedder("minilm"), MiniLMEmbedder)  # torch by default, no load
    int8 = make_embedder("minilm", "onnx-int8")
    assert isinstance(int8, OnnxEmbedder)
    assert int8.model_id == f"{MODEL_ID}@onnx-int8"
    assert make_embedder("minilm", batch_size=8).batch_size == 8  # type: ignore[attr-defined]


def test_unknown_names_list_the_valid_ones() -> None:
    valid = "hash, minilm, minilm-ft, static"
    with pytest.raises(ValueError, match=rf"^unknown embedder 'bert'; valid: {valid}$"):
        make_embedder("bert")
    with pytest.raises(ValueError, match=r"backend 'cuda'; valid: onnx, onnx-int8, torch$"):
        make_embedder("minilm", "cuda")
    with pytest.raises(ValueError, match=r"backend 'cuda'; valid: onnx, onnx-int8, torch$"):
        make_embedder("hash", "cuda")


def test_a_query_embedder_matches_the_stored_vectors() -> None:
    # vectors made by onnx-int8 are searched with onnx-int8 (no other backend shares its space)
    q = make_embedder("minilm", model_id=f"{MODEL_ID}@onnx-int8")
    assert isinstance(q, OnnxEmbedder)
    assert q.quantized
    with pytest.raises(ValueError, match="made by the onnx-int8 backend"):
        make_embedder("minilm", "torch", model_id=f"{MODEL_ID}@onnx-int8")
    # the hash embedder takes its dimension from the stored model id; a valid backend is a no-op
    assert make_embedder("hash", "onnx", model_id="hash-32").dimension == 32


def test_embedder_name_is_the_registered_name() -> None:
    assert embedder_name(HashEmbedder(8)) == "hash"
    assert embedder_name(MiniLMEmbedder()) == "minilm"
    assert embedder_name(OnnxEmbedder(quantized=True)) == "minilm"

    class Anonymous(HashEmbedder):
        name = "mine"

    with pytest.raises(ValueError, match=r"Anonymous has no registered name.*'mine'"):
        embedder_name(Anonymous())


def test_the_cache_carries_its_inner_embedder_s_name(tmp_path: Path) -> None:
    assert embedder_name(CachedEmbedder(HashEmbedder(8), tmp_path)) == "hash"


def test_the_index_manifest_records_the_embedder(tmp_path: Path) -> None:
    units = pl.DataFrame({"unit_id": ["a", "b"], "text": ["x", "y"]})
    vectors = np.eye(2, dtype=np.float32)
    built = VectorIndex.build(units, vectors, model_id="hash-2", embedder="hash")
    assert built.manifest.embedder == "hash"
    built.save(tmp_path / "ix")
    back = VectorIndex.load(tmp_path / "ix")
    assert back.manifest.embedder == "hash"
    assert VectorIndex.build(units, vectors, model_id="m").manifest.embedder is None


def test_index_kinds_are_a_registry() -> None:
    assert INDEX_KINDS.names() == ("flat", "hnsw", "ivf", "ivfpq")
    with pytest.raises(ValueError, match="index kind 'flat' is registered twice"):
        INDEX_KINDS.add("flat", INDEX_KINDS.get("flat"))
    units = pl.DataFrame({"unit_id": ["a"]})
    with pytest.raises(
        ValueError, match=r"^unknown index kind 'lsh'; valid: flat, hnsw, ivf, ivfpq$"
    ):
        VectorIndex.build(
            units, np.ones((1, 2), dtype=np.float32), model_id="m", spec=IndexSpec("lsh")
        )


def test_require_names_the_extra() -> None:
    assert require("json", "eval").__name__ == "json"
    with pytest.raises(ImportError) as info:
        require("no_such_module_xyz", "ray", feature="engine='ray'")
    assert str(info.value).startswith(
        "convlab-memory[ray] is needed for engine='ray': pip install 'convlab-memory[ray]' ("
    )
    assert missing_extra("faiss", "index") == (
        "convlab-memory[index] is needed (faiss): pip install 'convlab-memory[index]'"
    )


def test_vendored_stopwords_are_scikit_learn_s() -> None:
    text = pytest.importorskip("sklearn.feature_extraction.text")
    from convlab.stopwords import ENGLISH_STOP_WORDS

    assert ENGLISH_STOP_WORDS == text.ENGLISH_STOP_WORDS
    assert len(ENGLISH_STOP_WORDS) == 318


def test_the_fine_tuned_embedder_is_named_by_its_model_id(tmp_path: Path) -> None:
    from convlab.embed.finetune import FineTuneRecipe, finetuned_dir, finetuned_model_id

    with pytest.raises(ValueError, match="needs the model_id"):
        make_embedder("minilm-ft")
    with pytest.raises(ValueError, match="torch only"):
        make_embedder("minilm-ft", "onnx", model_id="x")
    model_id = finetuned_model_id("f" * 64, FineTuneRecipe(), 3, 10)
    assert model_id.startswith(f"{MODEL_ID}+ft:ffffffffffff-")
    assert model_id.endswith(":fold3of10")
    with pytest.raises(FileNotFoundError, match=r"eval\.finetune_cv"):
        make_embedder("minilm-ft", model_id=model_id, cache_dir=tmp_path)
    # folds, data and recipes each get their own id and folder, all under the cache root
    ids = {
        model_id,
        finetuned_model_id("f" * 64, FineTuneRecipe(), 4, 10),
        finetuned_model_id("e" * 64, FineTuneRecipe(), 3, 10),
        finetuned_model_id("f" * 64, FineTuneRecipe(epochs=2), 3, 10),
        finetuned_model_id("f" * 64, FineTuneRecipe()),
    }
    assert len(ids) == 5
    folders = {finetuned_dir(i, tmp_path) for i in ids}
    assert len(folders) == 5
    assert all(f.parent == tmp_path / "finetuned" for f in folders)
    with pytest.raises(ValueError, match="not a fine-tuned"):
        finetuned_dir(MODEL_ID, tmp_path)
    with pytest.raises(ValueError, match="fold 10"):
        finetuned_model_id("f" * 64, FineTuneRecipe(), 10, 10)
