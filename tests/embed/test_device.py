"""The embedder's device: resolved once, refused plainly, never part of a cache key.

No test needs a GPU: torch's ``cuda.is_available`` (and onnxruntime's provider list) are patched
to say there is one, and what the model would be built with is recorded instead of built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from convlab.app.cli import main
from convlab.embed import CachedEmbedder, DeviceUnavailable, MiniLMEmbedder, resolve_device
from convlab.embed.onnx import OnnxEmbedder
from convlab.model import MODEL_ID
from convlab.paths import sample_data_path
from convlab.store import Store
from tests.helpers import index_argv

torch = pytest.importorskip("torch")


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch sees no GPU, whatever the machine has."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch says it sees a GPU (nothing is ever run on it here)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)


@pytest.fixture
def built_with(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The keyword arguments SentenceTransformer is constructed with (no model is loaded)."""
    import sentence_transformers

    seen: dict[str, Any] = {}

    class Recorder:
        def __init__(self, path: str, **kwargs: Any) -> None:
            seen.update(kwargs, path=path)

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", Recorder)
    return seen


def test_auto_is_the_cpu_without_a_gpu_and_the_default(
    no_gpu: None, built_with: dict[str, Any]
) -> None:
    assert resolve_device("auto") == "cpu"
    embedder = MiniLMEmbedder()  # the default device is auto
    assert embedder.device == "cpu"
    embedder.model  # noqa: B018 - builds the (recorded) model
    assert built_with["device"] == "cpu"


def test_auto_is_the_gpu_when_torch_sees_one(gpu: None, built_with: dict[str, Any]) -> None:
    embedder = MiniLMEmbedder()
    assert embedder.device == "cuda"
    embedder.model  # noqa: B018 - builds the (recorded) model
    assert built_with["device"] == "cuda"
    assert MiniLMEmbedder(device="cpu").device == "cpu"  # cpu is never overridden


def test_cuda_without_a_gpu_is_refused_in_one_line(no_gpu: None) -> None:
    with pytest.raises(DeviceUnavailable, match=r"^--device cuda: no CUDA GPU is available"):
        MiniLMEmbedder(device="cuda")
    with pytest.raises(ValueError, match=r"unknown device 'tpu'; valid: auto, cpu, cuda"):
        resolve_device("tpu")


def test_the_device_is_never_part_of_the_cache_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    on_gpu = MiniLMEmbedder()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    on_cpu = MiniLMEmbedder()
    assert (on_gpu.device, on_cpu.device) == ("cuda", "cpu")
    assert on_gpu.model_id == on_cpu.model_id == MODEL_ID
    gpu_cache, cpu_cache = CachedEmbedder(on_gpu, tmp_path), CachedEmbedder(on_cpu, tmp_path)
    assert gpu_cache.directory == cpu_cache.directory
    assert (gpu_cache.device, cpu_cache.device) == ("cuda", "cpu")  # kept as provenance


def test_onnx_runs_on_the_cpu_without_the_cuda_provider(
    gpu: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    onnxruntime = pytest.importorskip("onnxruntime")
    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CPUExecutionProvider"])
    assert OnnxEmbedder().device == "cpu"  # auto: a GPU torch sees is no use to the CPU build
    with pytest.raises(DeviceUnavailable, match="onnxruntime has no CUDA provider"):
        OnnxEmbedder(device="cuda")
    with_cuda = ["CUDAExecutionProvider", "CPUExecutionProvider"]
    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: with_cuda)
    assert OnnxEmbedder().device == "cuda"
    # int8 stays on the CPU: its quantized operators have no CUDA kernels
    assert OnnxEmbedder(quantized=True).device == "cpu"
    with pytest.raises(DeviceUnavailable, match="onnx-int8 backend runs on the CPU only"):
        OnnxEmbedder(quantized=True, device="cuda")


def test_cli_index_refuses_cuda_without_a_gpu(
    no_gpu: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["index", str(sample_data_path()), "--store", str(tmp_path / "s"), "-q"]
    assert main([*argv, "--backend", "torch", "--device", "cuda"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("convlab index: --device cuda: no CUDA GPU is available")
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "s" / "manifest.json").exists()  # refused before any work


def test_eval_run_refuses_cuda_without_a_gpu(
    no_gpu: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from convlab.app.cli.eval import main as eval_main

    code = eval_main(["--device", "cuda", "--out", str(tmp_path / "run")])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("python -m eval.run: --device cuda: no CUDA GPU")
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_a_new_store_on_a_gpu_embeds_with_torch(gpu: None, tmp_path: Path) -> None:
    from convlab.app.cli.index import STORE_BACKEND, default_backend

    store = Store(tmp_path / "new")
    assert default_backend(store, "minilm", device="auto") == "torch"  # onnx-int8: CPU only
    assert default_backend(store, "minilm", device="cpu") == STORE_BACKEND


def test_the_store_records_the_device_as_provenance(tmp_path: Path) -> None:
    assert main(index_argv(sample_data_path(), tmp_path / "s")) == 0
    manifest = Store(tmp_path / "s").manifest()
    assert manifest.device == "cpu"  # the hash embedder computes on the CPU
    assert manifest.engine == {"name": "local"}
    assert manifest.model_id == "hash-64"  # the key: no device in it
