"""Which backend ``convlab index`` embeds with when ``--backend`` is not given."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from convlab.app.cli import main
from convlab.app.cli.index import STORE_BACKEND, default_backend
from convlab.app.exits import EXIT_OK
from convlab.paths import sample_data_path
from convlab.store import Store

SAMPLE = sample_data_path() / "transcripts"


class _Manifest:
    """A store whose manifest names ``model_id`` (or has none)."""

    def __init__(self, model_id: str | None) -> None:
        self.model_id = model_id

    def manifest(self) -> _Manifest:  # the store's typed manifest: only model_id is read
        if self.model_id is None:
            raise FileNotFoundError("no index at ...")
        return self


def test_a_new_store_embeds_with_onnx_int8_and_an_old_one_with_its_own() -> None:
    assert STORE_BACKEND == "onnx-int8"
    onnx = all(importlib.util.find_spec(m) for m in ("onnx", "onnxruntime"))
    assert default_backend(_Manifest(None), "minilm") == ("onnx-int8" if onnx else "torch")  # type: ignore[arg-type]
    torch_store = _Manifest("sentence-transformers/all-MiniLM-L6-v2")
    assert default_backend(torch_store, "minilm") == "torch"  # type: ignore[arg-type]
    int8_store = _Manifest("sentence-transformers/all-MiniLM-L6-v2@onnx-int8")
    assert default_backend(int8_store, "minilm") == "onnx-int8"  # type: ignore[arg-type]
    # --rebuild starts anew: the new store's default
    rebuilt = default_backend(torch_store, "minilm", rebuild=True)  # type: ignore[arg-type]
    assert rebuilt == ("onnx-int8" if onnx else "torch")
    assert default_backend(_Manifest(None), "hash") == "torch"  # type: ignore[arg-type]


def test_without_the_onnx_extra_a_new_store_says_it_falls_back_to_torch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "onnx" else real(name, *a)
    )
    assert default_backend(_Manifest(None), "minilm") == "torch"  # type: ignore[arg-type]
    assert "onnx-int8 needs convlab-memory[onnx]; embedding with torch" in capsys.readouterr().err


@pytest.mark.model
def test_a_new_minilm_store_is_onnx_int8_and_searches(tmp_path: Path) -> None:
    store = tmp_path / "s"
    argv = ["index", str(SAMPLE), "--store", str(store), "-q", "--system", "turn_pair"]
    assert main(argv) == EXIT_OK
    assert Store(store).manifest().model_id.endswith("@onnx-int8")
    hits = Store(store).search("which FAISS index for 384-dimension vectors", k=3)
    assert hits.height == 3
    assert main(argv) == EXIT_OK  # the update keeps the store's backend: nothing to redo
    assert Store(store).manifest().model_id.endswith("@onnx-int8")
