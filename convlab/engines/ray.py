"""The ``ray`` engine: embedding on Ray Data, an actor pool that loads the model once per actor.

It also reads transcript trees (:meth:`RayEngine.load_parts`, behind
``convlab.load(path, engine=get_engine("ray"))``): the local parallel loader's chunks of files,
one Ray task each, merged the same way.

A job (:meth:`RayEngine.embed`):

1. texts already in the :class:`convlab.embed.CachedEmbedder`'s cache are looked up here and
   never reach Ray; the remaining distinct texts are sorted longest first (batches of similar
   length pad less) and put into a Ray Dataset from Arrow tables (``ray.data.from_arrow``, no
   pickled frames), in blocks of ``block_rows`` texts;
2. ``map_batches`` runs :class:`~convlab.engines.ray_actor.EmbedBatches` on a fixed pool of
   ``actors`` actors: each actor rebuilds the embedder from its :class:`EmbedderSpec` (class by
   import path and keyword arguments, never a live torch model), loads the model once at
   start-up and runs torch on ``cpus_per_actor`` threads; an actor takes one block at a time
   (Ray Data's default of four queued per actor left one actor working through its queue while
   the others stopped);
3. the actors' output (row id, vector, encode time, node id) is written as Parquet shards into a
   temporary folder, read back, checked (every id exactly once: none lost, none duplicated), put
   back into input order and merged into the cache (an atomic segment, as the local path writes).

The device (``auto``, ``cpu``, ``cuda``) is resolved against the cluster, not this process, at
each job (:func:`plan_actors`): on ``cuda`` each actor asks Ray for ``gpus_per_actor`` GPUs and
builds its model there; on ``cpu`` it asks for none. :attr:`RayEngine.last_job` records the
device and the Ray node each batch ran on.

An actor that dies mid-job is restarted by Ray (``max_restarts``) and its batch run again
(``max_task_retries``); the result is the same. With no ``address`` the engine starts a local Ray
instance sized to the machine (``num_cpus=os.cpu_count()``, dashboard off) and stops it on
:meth:`RayEngine.close`; with an ``address`` it joins a running cluster, where every node needs
convlab and the model package installed, and ``shard_dir`` must be a folder all nodes and this
process share.

Needs the ``convlab-memory[ray]`` extra (Ray Data); without it the engine fails when made, naming
it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from convlab.embed import embed_texts
from convlab.embed.device import Device, parse_device
from convlab.engines import IpcFrames, register_engine
from convlab.engines.ray_actor import (
    EMBEDDER_SPECS,
    ActorPlan,
    EmbedBatches,
    EmbedderSpec,
    embedder_spec,
    plan_actors,
)
from convlab.extras import require

if TYPE_CHECKING:
    import pyarrow as pa

    from convlab.embed import CachedEmbedder, Embedder
    from convlab.files import Found

__all__ = [
    "EMBEDDER_SPECS",
    "ActorPlan",
    "EmbedderSpec",
    "RayEngine",
    "RayJob",
    "embedder_spec",
    "plan_actors",
]

_FEATURE = "engine='ray' (Ray Data)"


ACTOR_START_SECONDS = 600
"""How long a job waits for its actor pool to start (loading the model included) before failing."""


def _import_ray() -> Any:
    ray = require("ray", "ray", feature=_FEATURE)
    require("ray.data", "ray", feature=_FEATURE)
    return ray


@dataclass(slots=True)
class RayJob:
    """What the last Ray job did (for benchmarks and logs).

    Attributes:
        texts: texts embedded.
        batches: ``map_batches`` calls.
        actors: actors in the pool.
        actor_processes: distinct processes that returned batches (more than ``actors`` when
            an actor was restarted).
        threads_per_actor: torch threads in an actor (0 for an embedder without torch).
        seconds: the job's wall time (Ray's start-up not included).
        encode_seconds: the actors' summed time inside ``encode``.
        start_seconds: the actors' summed start-up (building the embedder, loading the model).
        device: where the actors ran the model (``cpu`` or ``cuda``).
        nodes: texts embedded on each Ray node, by node id.
    """

    texts: int = 0
    batches: int = 0
    actors: int = 0
    actor_processes: int = 0
    threads_per_actor: int = 0
    seconds: float = 0.0
    encode_seconds: float = 0.0
    start_seconds: float = 0.0
    device: str = "cpu"
    nodes: dict[str, int] = field(default_factory=dict)


class _RayInner:
    """Stands in for a cached embedder's inner model: its misses are embedded by a Ray job."""

    def __init__(self, engine: RayEngine, inner: Embedder, shard_root: Path) -> None:
        self.engine = engine
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.shard_root = shard_root

    @property
    def device(self) -> str:
        """Where the last job ran the model (the cache records it as provenance)."""
        return self.engine.last_job.device

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.engine.run(texts, embedder_spec(self.inner), self.dimension, self.shard_root)


@register_engine("ray")
class RayEngine:
    """Embeds on Ray Data with an actor pool; see the module docstring for a job's steps.

    Args:
        address: a running cluster to join (``ray.init(address=...)``); None starts a local
            instance on this machine, stopped by :meth:`close`.
        actors: actors in the pool; None = the cluster's CPUs divided by ``cpus_per_actor`` (on
            the GPU: its GPUs divided by ``gpus_per_actor``).
        cpus_per_actor: CPUs reserved per actor; torch in the actor runs as many threads
            (at least one).
        device: ``auto`` (the GPU when the cluster has one), ``cpu`` or ``cuda``, resolved
            against the cluster at each job (:func:`plan_actors`).
        gpus_per_actor: GPUs each actor asks for on ``cuda`` (a fraction shares a GPU).
        batch_size: texts per ``map_batches`` call.
        block_rows: texts per Dataset block, the unit of work an actor takes. Each actor takes
            one block at a time (no queue of blocks per actor), so an actor that is done takes
            the next block instead of idling while another works through its queue.
        max_restarts: times Ray restarts a dead actor.
        max_task_retries: times a batch is retried after its actor died.
        shard_dir: where the Parquet shards go (a temporary folder inside it, removed after);
            None = beside the embedding cache.

    Raises:
        ImportError: Ray Data is not installed (the message names ``convlab-memory[ray]``).
        ValueError: a count below 1, or an unknown device.
    """

    name = "ray"

    def __init__(
        self,
        *,
        address: str | None = None,
        actors: int | None = None,
        cpus_per_actor: float = 1.0,
        device: str = Device.AUTO,
        gpus_per_actor: float = 1.0,
        batch_size: int = 256,
        block_rows: int = 256,
        max_restarts: int = 3,
        max_task_retries: int = 3,
        shard_dir: str | Path | None = None,
    ) -> None:
        self._ray = _import_ray()
        if actors is not None and actors < 1:
            raise ValueError("actors must be at least 1")
        if cpus_per_actor <= 0 or gpus_per_actor <= 0:
            raise ValueError("cpus_per_actor and gpus_per_actor must be positive")
        self.device = parse_device(str(device)).value
        if batch_size < 1 or block_rows < 1:
            raise ValueError("batch_size and block_rows must be at least 1")
        if max_restarts < 0 or max_task_retries < 0:
            raise ValueError("max_restarts and max_task_retries must be at least 0")
        self.address = address
        self.actors = actors
        self.cpus_per_actor = cpus_per_actor
        self.gpus_per_actor = gpus_per_actor
        self.batch_size = batch_size
        self.block_rows = block_rows
        self.max_restarts = max_restarts
        self.max_task_retries = max_task_retries
        self.shard_dir = Path(shard_dir) if shard_dir is not None else None
        self.last_job = RayJob()
        self.init_seconds = 0.0
        self._started = False

    def describe(self) -> dict[str, Any]:
        """The engine's settings, for manifests, and what its last job did (once one ran)."""
        out: dict[str, Any] = {
            "name": self.name,
            "address": self.address,
            "actors": self.actors,
            "cpus_per_actor": self.cpus_per_actor,
            "device": self.device,
            "gpus_per_actor": self.gpus_per_actor,
            "batch_size": self.batch_size,
            "block_rows": self.block_rows,
        }
        if self.last_job.texts:
            out["last_job"] = asdict(self.last_job)
        return out

    def _connect(self) -> None:
        ray = self._ray
        if ray.is_initialized():
            return
        started = time.perf_counter()
        if self.address is None:
            ray.init(
                address="local",
                num_cpus=os.cpu_count(),
                include_dashboard=False,
                _node_ip_address="127.0.0.1",  # a local instance talks over loopback only
                log_to_driver=False,
                logging_level=logging.WARNING,
                # the agents are Python processes that start slowly on a busy machine
                _system_config={"agent_register_timeout_ms": 300_000},
            )
        else:
            ray.init(address=self.address, log_to_driver=False, logging_level=logging.WARNING)
        self._started = True
        _forget_stale_stats_actor()
        self.init_seconds = time.perf_counter() - started
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)

    def close(self) -> None:
        """Stop the Ray instance this engine started (a joined cluster is only disconnected)."""
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
        self._started = False

    def load_slots(self) -> int:
        """The cluster's CPUs (``convlab.load(..., engine=...)`` makes 4 chunks for each)."""
        self._connect()
        return max(1, int(self._ray.cluster_resources().get("CPU", 1)))

    def load_parts(
        self, chunks: Sequence[Sequence[Found]], read: Callable[[Sequence[Found]], IpcFrames]
    ) -> list[IpcFrames]:
        """Each chunk of files read by one Ray task with ``read``; the results in chunk order.

        ``read`` is the local parallel loader's worker body, bound to its format and strictness
        (``functools.partial`` of :func:`convlab.loaders.registry.load_chunk_ipc`): it returns
        the chunk's frames as Arrow IPC bytes through Ray's object store, so the files need only
        be readable where the tasks run. A strict-mode :class:`~convlab.errors.LoadError`
        raised in a task is raised here as it is (naming file and line), not wrapped in Ray's
        error.
        """
        from convlab.errors import LoadError

        self._connect()
        ray = self._ray
        task = ray.remote(num_cpus=1)(_read_chunk)
        refs = [task.remote(read, list(chunk)) for chunk in chunks]
        try:
            blobs: list[IpcFrames] = ray.get(refs)
        except ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, LoadError):
                raise exc.cause from None
            raise
        return blobs

    def embed(self, texts: Sequence[str], embedder: CachedEmbedder) -> np.ndarray:
        """Each distinct text once; cached texts stay here, the others go to the actor pool.

        The cache's own bookkeeping runs unchanged (its lock, stats and atomic segment), with a
        stand-in for its inner model that runs the job; all of this call's misses go to **one**
        job (one segment), not one job per cache segment, so the actor pool starts once.
        """
        shard_root = self.shard_dir or embedder.directory
        stand_in = _RayInner(self, embedder.inner, shard_root)
        one_job = functools.partial(embedder.encode, via=stand_in, segment_texts=len(texts))
        return embed_texts(texts, embedder, encode=one_job)

    def run(
        self, texts: Sequence[str], spec: EmbedderSpec, dimension: int, shard_root: Path
    ) -> np.ndarray:
        """Embed ``texts`` (distinct, uncached) on the actor pool; rows in input order.

        Raises:
            RuntimeError: the job's output lost or duplicated a row, or has the wrong width.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        n = len(texts)
        if n == 0:
            return np.zeros((0, dimension), dtype=np.float32)
        self._connect()
        ray = self._ray
        started = time.perf_counter()
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=n)
        order = np.argsort(-lengths, kind="stable")
        table = pa.table(
            {
                "id": pa.array(order, type=pa.int64()),
                "text": pa.array([texts[i] for i in order], type=pa.string()),
            }
        )
        blocks = [table.slice(s, self.block_rows) for s in range(0, n, self.block_rows)]
        plan = plan_actors(
            ray.cluster_resources(),
            device=self.device,
            actors=self.actors,
            cpus_per_actor=self.cpus_per_actor,
            gpus_per_actor=self.gpus_per_actor,
            blocks=len(blocks),
            gpu_capable=spec.gpu,
        )
        # One block in flight per actor (Ray Data's default queues 4 on each): with 4, the
        # last blocks wait behind one busy actor while the others, with nothing left, stop.
        pool = ray.data.ActorPoolStrategy(size=plan.actors, max_tasks_in_flight_per_actor=1)
        # Blocks go out once every actor has started: otherwise the first actor up (the one on
        # the driver's node, say) takes blocks while the others still load; a pool that cannot
        # start within the limit is an error, not a wait forever.
        ray.data.DataContext.get_current().wait_for_min_actors_s = ACTOR_START_SECONDS
        out = ray.data.from_arrow(blocks).map_batches(
            EmbedBatches,
            fn_constructor_kwargs={
                "spec": spec.on_device(plan.device),
                "threads": max(1, int(self.cpus_per_actor)),
            },
            batch_size=self.batch_size,
            batch_format="pyarrow",
            compute=pool,
            **plan.resources,
            max_restarts=self.max_restarts,
            max_task_retries=self.max_task_retries,
        )
        shard_root.mkdir(parents=True, exist_ok=True)
        shards = Path(tempfile.mkdtemp(prefix=".ray-shards-", dir=shard_root))
        try:
            # The writes take no CPU slot: the actors hold every CPU of a local instance, and a
            # write waiting for one would keep every shard in the object store to the job's end.
            out.write_parquet(str(shards), ray_remote_args={"num_cpus": 0})
            result = pq.read_table(shards)
        finally:
            shutil.rmtree(shards, ignore_errors=True)
        vectors = _check_rows(result, n, dimension)
        self.last_job = RayJob(
            texts=n,
            batches=int(np.count_nonzero(result.column("encode_seconds").to_numpy() > 0)),
            actors=plan.actors,
            actor_processes=len(set(result.column("pid").to_pylist())),
            threads_per_actor=int(np.max(result.column("threads").to_numpy())),
            seconds=time.perf_counter() - started,
            encode_seconds=float(np.sum(result.column("encode_seconds").to_numpy())),
            start_seconds=float(np.sum(result.column("start_seconds").to_numpy())),
            device=plan.device,
            nodes=dict(sorted(Counter(result.column("node").to_pylist()).items())),
        )
        return vectors


def _forget_stale_stats_actor() -> None:
    """Drop the handle Ray Data keeps to its stats actor from an earlier connection.

    Ray Data caches that handle per cluster id, across ``ray.shutdown()``; a handle made by an
    earlier connection is unknown to the new one, so the second job of a process joining the same
    cluster (``convlab index --watch --engine ray --address``, two indexes in one test) fails with
    "Can't find actor". Without the cached handle Ray Data looks the actor up again by name.
    """
    with contextlib.suppress(ImportError, AttributeError):  # Ray Data's internals moved: no cache
        from ray.data._internal.stats import StatsManager

        StatsManager._stats_actor_handle = None


def _check_rows(result: pa.Table, n: int, dimension: int) -> np.ndarray:
    """The job's vectors in input order, after checking every id came back exactly once."""
    ids = result.column("id").to_numpy()
    counts = np.bincount(ids[(ids >= 0) & (ids < n)], minlength=n)
    lost, dup = int(np.count_nonzero(counts == 0)), int(np.count_nonzero(counts > 1))
    if lost or dup or ids.shape[0] != n:
        raise RuntimeError(
            f"the Ray job returned {ids.shape[0]} rows for {n} texts ({lost} lost, {dup} "
            "duplicated); nothing was cached"
        )
    flat = result.column("vector").combine_chunks().flatten().to_numpy()
    if flat.shape[0] != n * dimension:
        raise RuntimeError(f"the Ray job returned vectors of the wrong width (not {dimension})")
    out = np.empty((n, dimension), dtype=np.float32)
    out[ids] = flat.reshape(n, dimension)
    return out


def _read_chunk(read: Callable[[Sequence[Found]], IpcFrames], chunk: Sequence[Found]) -> IpcFrames:
    """A Ray task's body: ``read`` applied to one chunk of files.

    A top-level function, so that Ray pickles it by reference.
    """
    return read(chunk)
