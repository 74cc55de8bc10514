"""The Ray engine's actors: where they run (:func:`plan_actors`) and what they run.

:func:`plan_actors` resolves a job's device against the cluster's resources: the pool's size and
what each actor asks Ray for (``num_gpus`` on a GPU, none on the CPU). An actor never receives a
live model: :class:`EmbedderSpec` names the embedder's class by import path and its
constructor's arguments (:func:`embedder_spec` reads them from an instance), and the actor's
callable, :class:`EmbedBatches`, rebuilds it once at start-up. Each batch it returns carries the
vectors and what the job reports: encode time, start-up time, the actor's process, torch threads
and the id of the Ray node it ran on.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from convlab.embed import HashEmbedder, MiniLMEmbedder
from convlab.embed.device import Device, DeviceUnavailable, parse_device
from convlab.embed.onnx import OnnxEmbedder

if TYPE_CHECKING:
    import pyarrow as pa

    from convlab.embed import Embedder

__all__ = [
    "EMBEDDER_SPECS",
    "ActorPlan",
    "EmbedBatches",
    "EmbedderSpec",
    "embedder_spec",
    "plan_actors",
]


@dataclass(frozen=True, slots=True)
class ActorPlan:
    """Where a job's actors run: the device, the pool size, what each asks Ray for.

    Attributes:
        device: ``cpu`` or ``cuda``.
        actors: actors in the pool.
        resources: ``map_batches``' resource arguments (``num_cpus``, and ``num_gpus`` on cuda).
    """

    device: str
    actors: int
    resources: dict[str, float]


def plan_actors(
    cluster: Mapping[str, float],
    *,
    device: str,
    actors: int | None,
    cpus_per_actor: float,
    gpus_per_actor: float,
    blocks: int,
    gpu_capable: bool = True,
) -> ActorPlan:
    """The actors of a job on a cluster with ``cluster`` resources (``ray.cluster_resources()``).

    ``auto`` is ``cuda`` when the cluster has a GPU and the embedder can use one
    (``gpu_capable``: :attr:`EmbedderSpec.gpu`); then each actor asks for ``gpus_per_actor``
    GPUs and the pool defaults to as many actors as those fit; on ``cpu`` none is asked for and
    the pool defaults to the CPUs over ``cpus_per_actor``. Never more actors than blocks.

    Raises:
        DeviceUnavailable: ``cuda`` on a cluster without a GPU, or for an embedder that runs on
            the CPU only.

    Example:
        >>> plan_actors({"CPU": 16.0, "GPU": 2.0}, device="auto", actors=None,
        ...             cpus_per_actor=1.0, gpus_per_actor=1.0, blocks=10)
        ActorPlan(device='cuda', actors=2, resources={'num_cpus': 1.0, 'num_gpus': 1.0})
    """
    wanted = parse_device(device)
    if wanted is Device.CUDA and not gpu_capable:
        raise DeviceUnavailable(
            "--device cuda: on Ray only the torch backend runs on a GPU; use --backend torch, "
            "or --device cpu"
        )
    gpus = float(cluster.get("GPU", 0.0)) if gpu_capable else 0.0
    on_gpu = wanted is Device.CUDA or (wanted is Device.AUTO and gpus > 0)
    if on_gpu and gpus < gpus_per_actor:
        raise DeviceUnavailable(
            f"--device cuda: the Ray cluster has {gpus:g} GPUs, an actor needs "
            f"{gpus_per_actor:g}; use --device cpu or auto"
        )
    resources = {"num_cpus": cpus_per_actor}
    if on_gpu:
        resources["num_gpus"] = gpus_per_actor
        fit = int(gpus // gpus_per_actor)
    else:
        fit = int(float(cluster.get("CPU", 1.0)) // cpus_per_actor)
    pool = min(actors or max(1, fit), max(1, blocks))
    return ActorPlan(device="cuda" if on_gpu else "cpu", actors=pool, resources=resources)


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbedderSpec:
    """How to rebuild an embedder in another process: its class by import path, its arguments.

    Attributes:
        module: the module defining the class.
        qualname: the class's qualified name in that module.
        kwargs: keyword arguments of the class's constructor.
        gpu: the embedder can run on a GPU (a ``device`` argument on the torch backend); the
            ONNX backends and the hash embedder run on CPU actors.
    """

    module: str
    qualname: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    gpu: bool = False

    def __post_init__(self) -> None:
        if not self.module or not self.qualname:
            raise ValueError("an embedder spec needs the module and the class name")

    def on_device(self, device: str) -> EmbedderSpec:
        """This spec with its ``device`` argument set to ``device`` (unchanged without one).

        The engine resolves the device against the cluster (a head without a GPU may drive
        workers with one), so the actors' device is the engine's, not the driver's.
        """
        if "device" not in self.kwargs:
            return self
        return replace(self, kwargs={**self.kwargs, "device": device})

    def build(self) -> Embedder:
        """A new embedder of this class and arguments (in the calling process)."""
        obj: Any = importlib.import_module(self.module)
        for part in self.qualname.split("."):
            obj = getattr(obj, part)
        embedder: Embedder = obj(**self.kwargs)
        return embedder


EMBEDDER_SPECS: dict[type, Callable[[Any], dict[str, Any]]] = {
    MiniLMEmbedder: lambda e: {
        "batch_size": e.batch_size,
        "show_progress": False,
        "device": e.device,
    },
    OnnxEmbedder: lambda e: {
        "quantized": e.quantized,
        "batch_size": e.batch_size,
        "cache_dir": None if e.cache_dir is None else str(e.cache_dir),
        "export": e.export,
        "threads": e.threads,
        "device": e.device,
    },
    HashEmbedder: lambda e: {"dimension": e.dimension},
}
"""Embedder class -> its constructor's keyword arguments, read from an instance."""


def embedder_spec(embedder: Embedder) -> EmbedderSpec:
    """The spec an actor rebuilds ``embedder`` from.

    An embedder with ``get_config_dict()`` (its constructor's keyword arguments) is described by
    it; otherwise its class must be a key of :data:`EMBEDDER_SPECS`.

    Raises:
        ValueError: the embedder's class is unknown and has no ``get_config_dict``.

    Example:
        >>> embedder_spec(HashEmbedder(8)).kwargs
        {'dimension': 8}
    """
    cls = type(embedder)
    get_config = getattr(embedder, "get_config_dict", None)
    if callable(get_config):
        kwargs = dict(get_config())
    elif cls in EMBEDDER_SPECS:
        kwargs = EMBEDDER_SPECS[cls](embedder)
    else:
        raise ValueError(
            f"the Ray engine rebuilds the embedder in each actor from its class and arguments; "
            f"{cls.__module__}.{cls.__qualname__} has no get_config_dict() and is not in "
            "convlab.engines.ray.EMBEDDER_SPECS"
        )
    if "<locals>" in cls.__qualname__:
        raise ValueError(f"{cls.__qualname__} is defined in a function; actors cannot import it")
    gpu = "device" in kwargs and getattr(embedder, "backend", None) == "torch"
    return EmbedderSpec(module=cls.__module__, qualname=cls.__qualname__, kwargs=kwargs, gpu=gpu)


class EmbedBatches:
    """The actor's callable: builds the embedder once, then embeds each batch of texts.

    The model is loaded here, in the actor's start-up, not in its first batch (an embedder with
    a lazy ``model`` property is made to load it), and torch, when the embedder uses it, runs
    ``threads`` threads: one actor per CPU must not start a thread per core of the machine.
    """

    def __init__(self, spec: EmbedderSpec, threads: int) -> None:
        started = time.perf_counter()
        self.embedder = spec.build()
        getattr(self.embedder, "model", None)  # load a lazy model now
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(threads)
        self.threads = int(torch.get_num_threads()) if torch is not None else 0
        self.pid = os.getpid()
        self.node = _node_id()
        self.start_seconds = time.perf_counter() - started  # reported with the first batch

    def __call__(self, batch: pa.Table) -> pa.Table:
        """The batch's vectors with the job's bookkeeping (a row per text)."""
        import pyarrow as pa

        texts = batch.column("text").to_pylist()
        started = time.perf_counter()
        vecs = np.ascontiguousarray(self.embedder.encode(texts), dtype=np.float32)
        seconds = time.perf_counter() - started
        n, d = vecs.shape
        if n != len(texts):
            raise RuntimeError(f"the embedder returned {n} vectors for {len(texts)} texts")
        vectors = pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), d)
        encode_seconds = np.zeros(n, dtype=np.float64)
        encode_seconds[:1] = seconds  # once per batch: the column sums to the actor's busy time
        start_seconds = np.zeros(n, dtype=np.float64)
        start_seconds[:1], self.start_seconds = self.start_seconds, 0.0
        return pa.table(
            {
                "id": batch.column("id"),
                "vector": vectors,
                "encode_seconds": encode_seconds,
                "start_seconds": start_seconds,
                "pid": np.full(n, self.pid, dtype=np.int64),
                "threads": np.full(n, self.threads, dtype=np.int64),
                "node": pa.array([self.node] * n, type=pa.string()),
            }
        )


def _node_id() -> str:
    """The id of the Ray node this process runs on ("" outside Ray)."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return ""
    return str(ray.get_runtime_context().get_node_id())
