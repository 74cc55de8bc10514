"""Engines: the registry, the local engine, build_index, and the Ray engine on a local instance."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import convlab
from convlab.app.cli import main
from convlab.embed import CachedEmbedder, HashEmbedder, MiniLMEmbedder, embed_texts
from convlab.engines import ENGINES, get_engine, register_engine
from convlab.engines.local import LocalEngine
from convlab.paths import sample_data_path
from convlab.specs import IndexSpec
from convlab.store import Store

TEXTS = [
    "the nginx config needs websockets",
    "fix the double fetch in the loader",
    "the nginx config needs websockets",  # a repeat: embedded once
    "a",
    "why does the cache miss on the second run " * 5,
    "",
]


class CrashOnceEmbedder(HashEmbedder):
    """A HashEmbedder whose process dies (os._exit) on its first batch while ``marker`` is absent.

    The marker is created just before dying, so the restarted actor embeds normally: the test of
    Ray's own retry. Rebuilt in the actor from ``get_config_dict``.
    """

    def __init__(self, dimension: int = 32, marker: str = "") -> None:
        super().__init__(dimension)
        self.marker = marker

    def get_config_dict(self) -> dict[str, object]:
        return {"dimension": self.dimension, "marker": self.marker}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not os.path.exists(self.marker):
            Path(self.marker).touch()
            os._exit(1)
        return super().encode(texts)


# -- registry and local engine -------------------------------------------------------------------
def test_registry_holds_local_and_ray() -> None:
    assert sorted(ENGINES) == ["local", "ray"]
    assert isinstance(get_engine("local"), LocalEngine)


def test_unknown_engine_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown engine 'spark'; valid: local, ray"):
        get_engine("spark")


def test_an_engine_registered_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register_engine("local")(LocalEngine)


def test_engine_object_passes_through_and_refuses_options() -> None:
    eng = LocalEngine()
    assert get_engine(eng) is eng
    with pytest.raises(ValueError, match="constructor"):
        get_engine(eng, actors=2)


def test_local_engine_is_embed_texts(tmp_path: Path) -> None:
    cache = CachedEmbedder(HashEmbedder(16), tmp_path)
    got = LocalEngine().embed(TEXTS, cache)
    want = embed_texts(TEXTS, HashEmbedder(16))
    np.testing.assert_array_equal(got, want)
    # 6 texts, 5 distinct, all new
    assert (cache.stats.requested, cache.stats.embedded) == (5, 5)


def test_missing_ray_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'convlab-memory\[ray\]'"):
        get_engine("ray")


def test_cli_address_needs_the_ray_engine(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["index", str(sample_data_path()), "--address", "127.0.0.1:6379"])
    assert code == 2
    assert "--engine ray" in capsys.readouterr().err


# -- embedder specs and the job's row check ------------------------------------------------------
def test_embedder_spec_rebuilds_the_embedder() -> None:
    from convlab.engines.ray import embedder_spec

    spec = embedder_spec(HashEmbedder(8))
    assert (spec.module, spec.qualname, spec.kwargs) == (
        "convlab.embed.hashing",
        "HashEmbedder",
        {"dimension": 8},
    )
    rebuilt = spec.build()
    np.testing.assert_array_equal(rebuilt.encode(["a b"]), HashEmbedder(8).encode(["a b"]))
    minilm = embedder_spec(MiniLMEmbedder(batch_size=16, device="cpu"))  # no model is loaded
    assert minilm.kwargs == {"batch_size": 16, "show_progress": False, "device": "cpu"}
    assert minilm.gpu  # torch can run on a GPU; the hash embedder cannot
    assert not spec.gpu
    assert minilm.on_device("cuda").kwargs["device"] == "cuda"
    assert spec.on_device("cuda") == spec  # no device argument: unchanged
    from convlab.embed.onnx import OnnxEmbedder

    int8 = embedder_spec(OnnxEmbedder(quantized=True, batch_size=8, export=False))
    assert int8.kwargs == {
        "quantized": True,
        "batch_size": 8,
        "cache_dir": None,
        "export": False,
        "threads": None,
        "device": "cpu",
    }
    assert not int8.gpu  # the ONNX backends run on CPU actors
    assert int8.build().model_id == OnnxEmbedder(quantized=True).model_id
    crash = embedder_spec(CrashOnceEmbedder(4, "m"))
    assert (crash.qualname, crash.kwargs) == ("CrashOnceEmbedder", {"dimension": 4, "marker": "m"})


def test_embedder_spec_refuses_an_unknown_class() -> None:
    from convlab.engines.ray import embedder_spec

    class Opaque(HashEmbedder):
        pass

    with pytest.raises(ValueError, match="get_config_dict"):
        embedder_spec(Opaque(4))


# -- the device on Ray: resolved against the cluster, GPUs asked for per actor ------------------
def test_actors_ask_for_a_gpu_only_on_a_cluster_with_one() -> None:
    from convlab.engines.ray import plan_actors

    kw = {"actors": None, "cpus_per_actor": 1.0, "gpus_per_actor": 1.0, "blocks": 10}
    on_cpu = plan_actors({"CPU": 4.0}, device="auto", **kw)  # type: ignore[arg-type]
    assert (on_cpu.device, on_cpu.actors, on_cpu.resources) == ("cpu", 4, {"num_cpus": 1.0})
    on_gpu = plan_actors({"CPU": 16.0, "GPU": 2.0}, device="auto", **kw)  # type: ignore[arg-type]
    assert (on_gpu.device, on_gpu.actors) == ("cuda", 2)  # one actor per GPU
    assert on_gpu.resources == {"num_cpus": 1.0, "num_gpus": 1.0}
    kw["gpus_per_actor"] = 0.5  # two actors share a GPU
    assert plan_actors({"CPU": 16.0, "GPU": 2.0}, device="cuda", **kw).actors == 4  # type: ignore[arg-type]
    forced = plan_actors({"CPU": 16.0, "GPU": 2.0}, device="cpu", **kw)  # type: ignore[arg-type]
    assert (forced.device, forced.actors, forced.resources) == ("cpu", 10, {"num_cpus": 1.0})
    hashing = plan_actors(  # an embedder without a GPU path stays on CPU actors
        {"CPU": 4.0, "GPU": 1.0},
        device="auto",
        gpu_capable=False,
        **kw,  # type: ignore[arg-type]
    )
    assert hashing.device == "cpu"


def test_cuda_on_a_cluster_without_a_gpu_is_refused() -> None:
    from convlab.embed import DeviceUnavailable
    from convlab.engines.ray import plan_actors

    kw = {"actors": None, "cpus_per_actor": 1.0, "gpus_per_actor": 1.0, "blocks": 4}
    with pytest.raises(DeviceUnavailable, match="the Ray cluster has 0 GPUs"):
        plan_actors({"CPU": 4.0}, device="cuda", **kw)  # type: ignore[arg-type]
    with pytest.raises(DeviceUnavailable, match="only the torch backend runs on a GPU"):
        plan_actors({"GPU": 1.0}, device="cuda", gpu_capable=False, **kw)  # type: ignore[arg-type]


class _Stop(Exception):
    """Raised by the fake Dataset once the job's arguments are recorded."""


def test_ray_job_asks_for_gpus_and_builds_the_model_on_cuda(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``map_batches`` is given on a cluster with a GPU (a fake Ray: nothing runs)."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from types import SimpleNamespace

    from convlab.engines.ray import RayEngine, embedder_spec

    seen: dict[str, Any] = {}

    def map_batches(fn: object, **kwargs: Any) -> None:
        seen.update(kwargs)
        raise _Stop

    fake = SimpleNamespace(
        is_initialized=lambda: True,
        cluster_resources=lambda: {"CPU": 8.0, "GPU": 1.0},
        data=SimpleNamespace(
            DataContext=SimpleNamespace(get_current=lambda: SimpleNamespace()),
            ActorPoolStrategy=lambda **kw: kw,
            from_arrow=lambda blocks: SimpleNamespace(map_batches=map_batches),
        ),
    )
    engine = RayEngine(block_rows=2)
    monkeypatch.setattr(engine, "_ray", fake)
    spec = embedder_spec(MiniLMEmbedder(device="cpu"))  # the driver's own device: the CPU
    with pytest.raises(_Stop):
        engine.run(["a", "b", "c"], spec, 384, tmp_path)
    assert seen["num_gpus"] == 1.0
    assert seen["compute"] == {"size": 1, "max_tasks_in_flight_per_actor": 1}  # 1 GPU, 1 actor
    assert seen["fn_constructor_kwargs"]["spec"].kwargs["device"] == "cuda"
    seen.clear()
    cpu_engine = RayEngine(device="cpu", block_rows=2)
    monkeypatch.setattr(cpu_engine, "_ray", fake)
    with pytest.raises(_Stop):
        cpu_engine.run(["a", "b", "c"], spec, 384, tmp_path)
    assert "num_gpus" not in seen
    assert seen["fn_constructor_kwargs"]["spec"].kwargs["device"] == "cpu"


def _result(ids: list[int], d: int = 2) -> pa.Table:
    vec = np.arange(len(ids) * d, dtype=np.float32)
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "vector": pa.FixedSizeListArray.from_arrays(vec, d)}
    )


def test_job_rows_go_back_to_input_order() -> None:
    from convlab.engines.ray import _check_rows

    # row id 2 came first with vector [0, 1], id 0 second with [2, 3], id 1 third with [4, 5]
    out = _check_rows(_result([2, 0, 1]), 3, 2)
    np.testing.assert_array_equal(out, [[2, 3], [4, 5], [0, 1]])


@pytest.mark.parametrize(
    ("ids", "message"), [([0, 1], "1 lost, 0 duplicated"), ([0, 1, 1], "1 lost, 1 duplicated")]
)
def test_job_rows_lost_or_duplicated_are_refused(ids: list[int], message: str) -> None:
    from convlab.engines.ray import _check_rows

    with pytest.raises(RuntimeError, match=message):
        _check_rows(_result(ids), 3, 2)


# -- build_index, local ---------------------------------------------------------------------------
def test_build_index_local(tmp_path: Path) -> None:
    corpus = convlab.load(sample_data_path())
    built = convlab.build_index(
        corpus, "turn_pair", embedder=HashEmbedder(32), cache_dir=tmp_path / "cache"
    )
    chunks = convlab.chunks(corpus, convlab.ContentPolicy())
    want = convlab.units(chunks, "turn_pair")
    assert built.units["unit_id"].to_list() == want["unit_id"].to_list()
    np.testing.assert_allclose(built.vectors, embed_texts(want["text"].to_list(), HashEmbedder(32)))
    assert len(built.index) == want.height
    assert built.manifest.engine == {"name": "local"}
    assert built.manifest.embedding["embedded"] == want["text"].n_unique()
    # a unit finds itself first
    _, rows = built.index.search(built.vectors[:1], 1)
    assert built.vectors[rows[0, 0]] @ built.vectors[0] == pytest.approx(1.0)
    again = convlab.build_index(
        corpus, "turn_pair", embedder=HashEmbedder(32), cache_dir=tmp_path / "cache"
    )
    assert again.manifest.embedding["embedded"] == 0


def test_build_index_needs_a_cache(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cache_dir"):
        convlab.build_index(sample_data_path(), "turn_pair", embedder=HashEmbedder(8))
    with pytest.raises(ValueError, match="unknown index kind"):
        convlab.build_index(
            sample_data_path(),
            "turn_pair",
            embedder=HashEmbedder(8),
            cache_dir=tmp_path,
            index=IndexSpec("x"),
        )


class TorchHashEmbedder(HashEmbedder):
    """A HashEmbedder that imports torch when built, as the MiniLM embedder's model does."""

    def __init__(self, dimension: int = 32) -> None:
        super().__init__(dimension)
        import torch  # noqa: F401 - the actor now holds torch, whose threads it must set

    def get_config_dict(self) -> dict[str, object]:
        return {"dimension": self.dimension}


# -- the Ray engine on a local instance -----------------------------------------------------------
@pytest.fixture(scope="module")
def ray_engine() -> Iterator[object]:
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from convlab.engines.ray import RayEngine

    engine = RayEngine(actors=2, batch_size=16, block_rows=32)
    yield engine
    engine.close()


def _texts(n: int) -> list[str]:
    words = ["index", "cache", "actor", "batch", "query", "unit", "turn", "token", "shard"]
    return [
        " ".join(words[(i * k) % len(words)] for k in range(1, 2 + i % 7)) + f" {i}"
        for i in range(n)
    ]


@pytest.mark.slow
def test_ray_vectors_equal_local_and_second_run_embeds_nothing(
    ray_engine: object, tmp_path: Path
) -> None:
    from convlab.engines.ray import RayEngine

    assert isinstance(ray_engine, RayEngine)
    texts = _texts(200) + _texts(50)  # 250 texts, 200 distinct
    cache = CachedEmbedder(HashEmbedder(32), tmp_path / "ray")
    got = ray_engine.embed(texts, cache)
    want = embed_texts(texts, HashEmbedder(32))
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert (cache.stats.embedded, cache.stats.model_calls) == (200, 1)
    job = ray_engine.last_job
    assert (job.texts, job.actors) == (200, 2)
    assert job.batches == 13  # 200 rows: 6 blocks of 32 (2 batches of 16 each) + 1 block of 8
    again = CachedEmbedder(HashEmbedder(32), tmp_path / "ray")  # a new process's view
    np.testing.assert_allclose(ray_engine.embed(texts, again), want, atol=1e-6)
    assert (again.stats.embedded, again.stats.model_calls, again.stats.from_cache) == (0, 0, 200)


@pytest.mark.slow
def test_ray_skips_cached_texts_before_the_job(ray_engine: object, tmp_path: Path) -> None:
    texts = _texts(60)
    cache = CachedEmbedder(HashEmbedder(32), tmp_path / "c")
    LocalEngine().embed(texts[:45], cache)
    got = ray_engine.embed(texts, cache)  # type: ignore[attr-defined]
    assert ray_engine.last_job.texts == 15  # type: ignore[attr-defined]
    np.testing.assert_allclose(got, embed_texts(texts, HashEmbedder(32)), atol=1e-6)


@pytest.mark.slow
def test_ray_actor_killed_mid_job_gives_the_same_result(ray_engine: object, tmp_path: Path) -> None:
    marker = tmp_path / "crashed-once"
    texts = _texts(120)
    cache = CachedEmbedder(CrashOnceEmbedder(32, str(marker)), tmp_path / "crash")
    got = ray_engine.embed(texts, cache)  # type: ignore[attr-defined]
    assert marker.exists()  # an actor did die on its first batch
    np.testing.assert_allclose(got, embed_texts(texts, HashEmbedder(32)), atol=1e-6)
    assert cache.stats.embedded == 120


@pytest.mark.slow
def test_build_index_on_ray_equals_local(ray_engine: object, tmp_path: Path) -> None:
    kw = {"embedder": HashEmbedder(32), "index": IndexSpec("flat")}
    local = convlab.build_index(sample_data_path(), "turn_pair", cache_dir=tmp_path / "l", **kw)
    on_ray = convlab.build_index(
        sample_data_path(), "turn_pair", cache_dir=tmp_path / "r", engine=ray_engine, **kw
    )
    ids = on_ray.units["unit_id"]
    assert ids.to_list() == local.units["unit_id"].to_list()
    assert not ids.is_duplicated().any()
    np.testing.assert_allclose(on_ray.vectors, local.vectors, atol=1e-6)
    assert on_ray.manifest.engine["name"] == "ray"
    assert on_ray.manifest.embedding["embedded"] == local.manifest.embedding["embedded"]


@pytest.mark.slow
def test_cli_index_engine_ray_end_to_end(
    ray_engine: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = str(sample_data_path())
    for name in ("local", "ray"):
        argv = ["index", sample, "--store", str(tmp_path / name), "--embedder", "hash"]
        assert main([*argv, "--engine", name, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "from cache" in out
    local, on_ray = Store(tmp_path / "local").index(), Store(tmp_path / "ray").index()
    assert on_ray.units["unit_id"].to_list() == local.units["unit_id"].to_list()
    rows = np.arange(len(local))
    np.testing.assert_allclose(on_ray.vectors(rows), local.vectors(rows), atol=1e-6)
    # the second run of the same store embeds nothing
    argv = ["index", sample, "--store", str(tmp_path / "ray"), "--embedder", "hash"]
    assert main([*argv, "--engine", "ray", "--rebuild", "--quiet"]) == 0
    assert "texts: 0 embedded" in capsys.readouterr().out


@pytest.mark.slow
def test_ray_actor_runs_one_torch_thread_per_cpu(ray_engine: object, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    texts = _texts(40)
    cache = CachedEmbedder(TorchHashEmbedder(32), tmp_path / "torch")
    got = ray_engine.embed(texts, cache)  # type: ignore[attr-defined]
    np.testing.assert_allclose(got, embed_texts(texts, HashEmbedder(32)), atol=1e-6)
    job = ray_engine.last_job  # type: ignore[attr-defined]
    assert job.threads_per_actor == 1  # cpus_per_actor=1.0, on any machine
    assert job.start_seconds > 0  # each actor's start-up is timed apart from its batches
