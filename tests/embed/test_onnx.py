"""The ONNX backends: export written atomically and reused, cache keys by backend, CLI, quality."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import convlab.embed.onnx as eo
from convlab.app.cli import main
from convlab.app.exits import EXIT_OK, EXIT_USAGE
from convlab.embed import (
    BACKENDS,
    CachedEmbedder,
    HashEmbedder,
    MiniLMEmbedder,
    backend_of,
    minilm_embedder,
    query_embedder,
)
from convlab.embed.onnx import OnnxEmbedder, ensure_onnx_model, onnx_model_file
from convlab.model import MODEL_ID
from convlab.store import Store, StoreConfig


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("CONVLAB_CACHE", str(root))
    return root


class _Constant:
    """An embedder under a chosen model id whose every vector is ``value`` * e_0."""

    dimension = 4

    def __init__(self, model_id: str, value: float) -> None:
        self.model_id = model_id
        self.value = value
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), 4), dtype=np.float32)
        out[:, 0] = self.value
        return out


def test_backend_names_come_from_one_registry() -> None:
    assert BACKENDS.names() == ("onnx", "onnx-int8", "torch")
    with pytest.raises(
        ValueError, match="unknown embedding backend 'tensorrt'; valid: onnx, onnx-int8, torch"
    ):
        minilm_embedder("tensorrt")
    assert isinstance(minilm_embedder("torch"), MiniLMEmbedder)
    int8 = minilm_embedder("onnx-int8")
    assert isinstance(int8, OnnxEmbedder)
    assert int8.quantized
    assert [backend_of(minilm_embedder(b).model_id) for b in BACKENDS] == list(BACKENDS.names())
    assert minilm_embedder("torch").model_id == MODEL_ID  # old caches and stores stay valid
    with pytest.raises(ValueError, match="not sentence-transformers"):
        backend_of("hash-64")


def test_cache_keys_differ_by_backend(tmp_path: Path) -> None:
    torch_like = _Constant(minilm_embedder("torch").model_id, 1.0)
    int8_like = _Constant(minilm_embedder("onnx-int8").model_id, -1.0)
    a = CachedEmbedder(torch_like, tmp_path)
    b = CachedEmbedder(int8_like, tmp_path)
    assert a.directory != b.directory
    assert a.encode(["same text"])[0, 0] == 1.0
    # the int8 backend must not be served the torch vector of the same text
    assert b.encode(["same text"])[0, 0] == -1.0
    assert (int8_like.calls, b.stats.embedded) == (1, 1)
    # and each backend's vector is reused by a new process on the same cache
    again = CachedEmbedder(_Constant(int8_like.model_id, 5.0), tmp_path)
    assert again.encode(["same text"])[0, 0] == -1.0
    assert again.stats.embedded == 0


def _fake_export(calls: list[str], payload: bytes = b"fp32 model") -> object:
    def export(target: Path) -> None:
        calls.append(target.name)
        target.write_bytes(payload)

    return export


def test_export_is_written_once_and_reused(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(eo, "_export_fp32", _fake_export(calls))
    monkeypatch.setattr(eo, "_quantize", lambda src, dst: dst.write_bytes(src.read_bytes() + b"!"))
    first = ensure_onnx_model(quantized=False)
    assert first == onnx_model_file(quantized=False)
    assert first.is_relative_to(cache / "onnx")
    assert first.read_bytes() == b"fp32 model"
    assert calls[0].startswith(".tmp-")  # written under a temporary name, then renamed
    int8 = ensure_onnx_model(quantized=True)
    assert int8.read_bytes() == b"fp32 model!"
    assert ensure_onnx_model(quantized=False) == first
    assert ensure_onnx_model(quantized=True) == int8
    assert len(calls) == 1  # exported once, quantized from that export
    assert sorted(p.name for p in first.parent.iterdir()) == [
        ".lock",
        "model-int8.onnx",
        "model.onnx",
    ]


def test_a_failed_export_leaves_no_model_behind(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(target: Path) -> None:
        target.write_bytes(b"half a mod")
        raise RuntimeError("killed mid-export")

    monkeypatch.setattr(eo, "_export_fp32", broken)
    with pytest.raises(RuntimeError, match="killed mid-export"):
        ensure_onnx_model(quantized=False)
    folder = onnx_model_file(quantized=False).parent
    assert [p.name for p in folder.iterdir()] == [".lock"]
    calls: list[str] = []
    monkeypatch.setattr(eo, "_export_fp32", _fake_export(calls))
    assert ensure_onnx_model(quantized=False).read_bytes() == b"fp32 model"


def test_search_never_exports(cache: Path) -> None:
    emb = OnnxEmbedder(export=False)
    with pytest.raises(FileNotFoundError, match="convlab index"):
        emb.encode(["a query"])
    assert not onnx_model_file(quantized=False).exists()


def test_query_embedder_for_a_torch_store(cache: Path) -> None:
    # nothing exported: queries go through torch
    assert isinstance(query_embedder(MODEL_ID), MiniLMEmbedder)
    path = onnx_model_file(quantized=False)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"exported")
    emb = query_embedder(MODEL_ID)
    assert isinstance(emb, OnnxEmbedder)
    assert (emb.quantized, emb.export) == (False, False)
    assert isinstance(query_embedder(MODEL_ID, "torch"), MiniLMEmbedder)
    int8_id = f"{MODEL_ID}@onnx-int8"
    assert query_embedder(int8_id).model_id == int8_id
    with pytest.raises(ValueError, match="made by the onnx-int8 backend"):
        query_embedder(int8_id, "torch")
    with pytest.raises(ValueError, match="made by the torch backend"):
        query_embedder(MODEL_ID, "onnx-int8")


def test_a_store_refuses_to_mix_backends(tmp_path: Path) -> None:
    src = tmp_path / "hist"
    src.mkdir()
    (src / "s.jsonl").write_text(
        '{"type":"user","sessionId":"s1","uuid":"u1","timestamp":"2026-01-01T00:00:00Z",'
        '"message":{"role":"user","content":"how do I pin torch"}}\n'
        '{"type":"assistant","sessionId":"s1","uuid":"u2","parentUuid":"u1",'
        '"timestamp":"2026-01-01T00:00:01Z","message":{"role":"assistant",'
        '"content":[{"type":"text","text":"use a constraints file"}]}}\n'
    )

    def fake(backend: str) -> HashEmbedder:
        emb = HashEmbedder(384)
        emb.model_id = minilm_embedder(backend).model_id
        return emb

    store = Store(tmp_path / "store")
    store.update([src], config=StoreConfig(), embedder=fake("torch"), progress=False)
    assert store.manifest().model_id == MODEL_ID
    with pytest.raises(ValueError, match=r"onnx-int8.*--rebuild"):
        store.update([src], config=StoreConfig(), embedder=fake("onnx-int8"), progress=False)
    store.update(
        [src], config=StoreConfig(), embedder=fake("onnx-int8"), rebuild=True, progress=False
    )
    assert store.manifest().model_id == f"{MODEL_ID}@onnx-int8"


def test_cli_accepts_backend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "hist"
    src.mkdir()
    (src / "s.jsonl").write_text(
        '{"type":"user","sessionId":"s1","uuid":"u1","timestamp":"2026-01-01T00:00:00Z",'
        '"message":{"role":"user","content":"nginx websockets upgrade header"}}\n'
    )
    store = str(tmp_path / "store")
    base = ["index", str(src), "--store", store, "--embedder", "hash", "--quiet"]
    assert main([*base, "--backend", "tensorrt"]) == EXIT_USAGE
    assert "invalid choice: 'tensorrt'" in capsys.readouterr().err
    assert main([*base, "--backend", "onnx-int8"]) == EXIT_OK
    for backend in BACKENDS:
        code = main(["search", "nginx", "--store", store, "--backend", backend, "--json"])
        assert code == EXIT_OK
    assert main(["search", "nginx", "--store", store, "--backend", "cuda"]) == EXIT_USAGE


QUALITY_TEXTS = [
    "hello",
    "When did we fix the double fetch in the nginx websocket proxy?",
    "Caroline went to the LGBTQ support group yesterday and said it was powerful.",
    "def load(path):\n    with open(path) as fh:\n        return json.load(fh)",
    "The quick brown fox jumps over the lazy dog. " * 40,  # truncated at 256 tokens
]


@pytest.fixture(scope="module")
def torch_vectors() -> np.ndarray:
    return MiniLMEmbedder().encode(QUALITY_TEXTS)


@pytest.mark.model
@pytest.mark.slow
def test_onnx_fp32_matches_torch(torch_vectors: np.ndarray) -> None:
    vecs = OnnxEmbedder(quantized=False).encode(QUALITY_TEXTS)
    cos = (vecs * torch_vectors).sum(axis=1)
    assert cos.min() >= 0.9999
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


@pytest.mark.model
@pytest.mark.slow
def test_onnx_int8_is_close_to_torch(torch_vectors: np.ndarray) -> None:
    vecs = OnnxEmbedder(quantized=True).encode(QUALITY_TEXTS)
    cos = (vecs * torch_vectors).sum(axis=1)
    assert cos.min() >= 0.95
    assert cos.mean() >= 0.98
    # still ranks like fp32: each text is nearest to its own fp32 vector
    assert (np.argmax(vecs @ torch_vectors.T, axis=1) == np.arange(len(QUALITY_TEXTS))).all()
