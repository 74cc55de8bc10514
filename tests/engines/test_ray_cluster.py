"""The Ray engine past one node: a two-node cluster started on this machine with ``ray start``.

The cluster is this test's own: a head (``--resources '{"head": 1}'``) and a second node
(``'{"worker2": 1}'``) joined with ``ray start --address``, one CPU each, small object stores,
free ports and a fresh temporary folder, so it cannot meet another Ray on the machine.
``convlab index --engine ray --address ADDR`` then embeds on it: its two actors (one CPU each)
must land one on each node, and the store's vectors must equal the local engine's.

Each node runs ``ray start --block`` as a child of this test and is stopped by a signal to that
child: ``ray stop`` would stop every Ray on the machine, not only this cluster's.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, closing, suppress
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import convlab
from convlab.app.cli import main
from convlab.paths import sample_data_path
from convlab.store import Store

pytestmark = pytest.mark.slow

OBJECT_STORE_BYTES = 80 * 1024 * 1024
"""Each node's object store (Ray's minimum is 75 MiB): the test's data is a few MiB."""
START_SECONDS = 180
"""How long a node may take to start on a busy machine."""


def _need_ray() -> None:
    """Ray is part of the dev install: missing under CI is a failure, elsewhere a skip."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the two-node Ray test needs the ray extra under CI: {exc}")
        pytest.skip(f"the ray extra is not installed: {exc}")


def _free_ports(n: int) -> list[int]:
    """``n`` distinct ports free on this machine now (bound together, then released)."""
    with ExitStack() as stack:
        socks = [stack.enter_context(closing(socket.socket())) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def _node_ports(ports: list[int]) -> list[str]:
    """The per-node ports of ``ray start``: two nodes on one host must not share any."""
    names = [
        "--node-manager-port",
        "--object-manager-port",
        "--dashboard-agent-listen-port",
        "--dashboard-agent-grpc-port",
        "--metrics-export-port",
        "--runtime-env-agent-port",
    ]
    return [arg for name, port in zip(names, ports, strict=True) for arg in (name, str(port))]


def _start_node(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``ray start --block ARGS`` in its own session; returns once it says the node is up."""
    ray_cli = Path(sys.executable).with_name("ray")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(ray_cli), "start", "--block", "--disable-usage-stats", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if "Ray runtime started" in text:
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    _stop(proc)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
    pytest.fail(f"ray start {' '.join(args[:2])} did not come up:\n{tail}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop one node: SIGTERM to its ``ray start --block`` (which stops the node's processes),
    then SIGKILL to the session it leads if anything of it is left."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=60)
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # this node's own session: its pid is the group id
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, Any]]:
    """A head and a second node on this machine; yields the address and the two node ids."""
    _need_ray()
    import ray

    root = Path(tempfile.mkdtemp(prefix="cvl-ray-", dir="/tmp"))  # short: Ray's socket paths
    repo = str(Path(convlab.__file__).resolve().parents[1])
    env = {
        **os.environ,
        # the nodes' workers import this checkout's convlab, as the driver does
        "PYTHONPATH": os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    ports = _free_ports(13)
    address = f"127.0.0.1:{ports[0]}"
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1"]
    common += ["--object-store-memory", str(OBJECT_STORE_BYTES)]
    nodes: list[subprocess.Popen[bytes]] = []
    try:
        head = ["--head", "--port", str(ports[0]), "--temp-dir", str(root / "tmp")]
        head += ["--include-dashboard", "false", "--resources", json.dumps({"head": 1})]
        nodes.append(_start_node([*head, *common, *_node_ports(ports[1:7])], root / "h.log", env))
        second = ["--address", address, "--resources", json.dumps({"worker2": 1})]
        nodes.append(
            _start_node([*second, *common, *_node_ports(ports[7:13])], root / "w.log", env)
        )
        ray.init(address=address, log_to_driver=False)
        try:
            deadline = time.monotonic() + START_SECONDS
            while len(alive := [n for n in ray.nodes() if n["Alive"]]) < 2:
                if time.monotonic() > deadline:
                    pytest.fail(f"the cluster has {len(alive)} live nodes, not 2")
                time.sleep(0.5)
            by_resource = {
                name: n["NodeID"]
                for n in alive
                for name in ("head", "worker2")
                if name in n["Resources"]
            }
        finally:
            ray.shutdown()
        assert set(by_resource) == {"head", "worker2"}
        yield {"address": address, "nodes": by_resource}
    finally:
        for proc in reversed(nodes):
            _stop(proc)
        shutil.rmtree(root, ignore_errors=True)


def test_index_on_two_nodes_spreads_actors_and_equals_local(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    sample = str(sample_data_path())
    base = ["index", sample, "--embedder", "hash", "--quiet"]
    on_ray = [*base, "--store", str(tmp_path / "ray"), "--engine", "ray"]
    assert main([*on_ray, "--address", cluster["address"]]) == 0
    assert main([*base, "--store", str(tmp_path / "local")]) == 0

    engine = Store(tmp_path / "ray").manifest().engine
    assert (engine["name"], engine["address"]) == ("ray", cluster["address"])
    job = engine["last_job"]
    assert job["actors"] == 2  # the cluster's two CPUs, one per actor
    assert job["device"] == "cpu"  # auto on a cluster without a GPU
    # one actor on each node, each embedding a share of the texts
    assert set(job["nodes"]) == set(cluster["nodes"].values())
    assert all(n > 0 for n in job["nodes"].values())
    assert sum(job["nodes"].values()) == job["texts"]

    # a second job from this process, after the first one disconnected (`index --watch` does so)
    again = [*base, "--store", str(tmp_path / "again"), "--engine", "ray"]
    assert main([*again, "--address", cluster["address"]]) == 0
    assert Store(tmp_path / "again").manifest().engine["last_job"]["texts"] == job["texts"]

    local, ray_store = Store(tmp_path / "local"), Store(tmp_path / "ray")
    assert ray_store.manifest().counts == local.manifest().counts
    for strategy in local.manifest().config.dense:
        a, b = local.index(strategy), ray_store.index(strategy)
        assert b.units["unit_id"].to_list() == a.units["unit_id"].to_list()
        rows = np.arange(len(a))
        np.testing.assert_allclose(b.vectors(rows), a.vectors(rows), atol=1e-6)


@pytest.mark.model
def test_index_on_two_nodes_with_the_real_model_equals_local(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    """The MiniLM embedder rebuilt in the actors (device included) makes the local vectors."""
    sample = str(sample_data_path())
    base = ["index", sample, "--backend", "torch", "--device", "cpu", "--quiet"]
    on_ray = [*base, "--store", str(tmp_path / "ray"), "--engine", "ray"]
    assert main([*on_ray, "--address", cluster["address"]]) == 0
    assert main([*base, "--store", str(tmp_path / "local")]) == 0

    manifest = Store(tmp_path / "ray").manifest()
    job = manifest.engine["last_job"]
    assert set(job["nodes"]) == set(cluster["nodes"].values())
    assert manifest.device == job["device"] == "cpu"
    local, ray_store = Store(tmp_path / "local"), Store(tmp_path / "ray")
    assert ray_store.manifest().model_id == local.manifest().model_id
    for strategy in local.manifest().config.dense:
        a, b = local.index(strategy), ray_store.index(strategy)
        assert b.units["unit_id"].to_list() == a.units["unit_id"].to_list()
        rows = np.arange(len(a))
        np.testing.assert_allclose(b.vectors(rows), a.vectors(rows), atol=1e-5)
