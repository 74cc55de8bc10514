"""Benchmark search: FAISS against numpy, and searching with a system (CLI end to end, warm).

``python -m eval.bench_search --out DIR [--sizes 10000,100000,1000000]`` writes
``DIR/bench_search.json``. Vectors are real MiniLM embeddings of LoCoMo utterances, tiled with
small Gaussian noise and renormalised (closer to real units than uniform random vectors).
Targets: exact within 1.2x of numpy; at 100k units HNSW p50 < 1 ms with recall@10 >= 0.99.

``--store DIR`` and ``--system-units N`` time the search with a system instead (default: the
default system, :func:`convlab.systems.default_system`), written to ``bench_search_system.json``:

- ``cli`` (with ``--store``): ``convlab search QUERY --store DIR`` run as a new process per
  query, one shot, end to end (start, load, embed, search, print), twice: ``served``, with a
  ``convlab serve`` for the store started first (the process hands the search to it), target
  p50 <= 0.5 s at load <= 2; and ``in_process`` (``CONVLAB_SERVER=off``, the search loaded in
  the process: what a search without a server costs), no target;
- ``warm`` (with ``--system-units N``): the in-process search the panel and an MCP server run,
  views loaded once, at ``N`` units or more in all (LoCoMo's units of the system's strategies,
  tiled into copies of the conversations; vectors from the hashing embedder, since only their
  number matters here, and queries embedded by MiniLM); target p50 <= 50 ms at 100k units.

The load average is recorded before and after each part: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl

from convlab import schema
from convlab.atomic import write_text_atomic
from convlab.embed import MiniLMEmbedder
from convlab.index import VectorIndex
from convlab.paths import locomo_path
from convlab.specs import IndexSpec


def base_vectors(n: int = 3000) -> tuple[np.ndarray, MiniLMEmbedder]:
    data = json.loads(locomo_path().read_text())
    texts = [
        u["text"]
        for s in data
        for k, v in s["conversation"].items()
        if k.startswith("session_") and isinstance(v, list)
        for u in v
    ][:n]
    emb = MiniLMEmbedder(show_progress=False)
    return emb.encode(texts), emb


def tile(base: np.ndarray, size: int, seed: int, sigma: float = 0.05) -> np.ndarray:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(base), size)
    v = base[idx] + rng.normal(0, sigma, (size, base.shape[1])).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def latencies(fn: Callable[[np.ndarray], object], queries: np.ndarray) -> np.ndarray:
    out = []
    for q in queries:
        t = time.perf_counter()
        fn(q[None, :])
        out.append((time.perf_counter() - t) * 1000)
    return np.array(out)


def numpy_scan(vectors: np.ndarray, k: int) -> Callable[[np.ndarray], np.ndarray]:
    def run(q: np.ndarray) -> np.ndarray:
        s = vectors @ q[0]
        top = np.argpartition(-s, k)[:k]
        return top[np.argsort(-s[top])]

    return run


QUERIES = [
    "when did we talk about the support group?",
    "nginx websocket connections fail with a 400",
    "which FAISS index did we choose for low latency",
    "what did Caroline say about adoption agencies",
    "how do we add an index to postgres without locking",
    "the flaky test fixture that leaked state",
    "docker layer cache in GitHub Actions",
    "what book did Melanie recommend",
    "sqlite WAL mode and concurrent readers",
    "regex for ISO 8601 dates",
]


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


CLI_TARGET_P50_S = 0.5
"""The one-shot target of ``convlab search`` through a server (p50, at load <= 2)."""


def cli_end_to_end(store: Path, system: str | None, repeat: int, *, served: bool) -> dict:
    """``convlab search`` as a new process per query: p50 and p90 of the wall time.

    ``served``: with a ``convlab serve`` for the store, started before and stopped after (not
    timed); else each process searches itself (``CONVLAB_SERVER=off``).
    """
    import subprocess
    import sys

    from convlab.app.cli.serve import start_background

    cmd = [sys.executable, "-m", "convlab", "search", "--store", str(store), "-k", "10"]
    cmd += ["--system", system] if system else []
    env = {**os.environ, "CONVLAB_SERVER": "on" if served else "off"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # time imports as an installed package runs them
    server = start_background(store, idle=30, wait=600) if served else None
    load_before = _load()
    times, codes = [], []
    try:
        for _ in range(repeat):
            for q in QUERIES:
                t = time.perf_counter()
                done = subprocess.run([*cmd, q], capture_output=True, text=True, env=env)
                times.append(time.perf_counter() - t)
                codes.append(done.returncode)
                if done.returncode not in (0, 1):
                    raise RuntimeError(f"convlab search failed: {done.stderr.strip()}")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=60)
    p50, load_after = float(np.percentile(times, 50)), _load()
    out: dict[str, Any] = {
        "command": " ".join([*cmd, "QUERY"]) + ("" if served else " (CONVLAB_SERVER=off)"),
        "server": "convlab serve --store STORE (started first, not timed)" if served else None,
        "runs": len(times),
        "exit_codes": dict(sorted(Counter(codes).items())),
        "p50_s": p50,
        "p90_s": float(np.percentile(times, 90)),
        "load_before": load_before,
        "load_after": load_after,
    }
    if served:
        out |= {"target_p50_s": CLI_TARGET_P50_S, "met": p50 <= CLI_TARGET_P50_S}
        out["load_at_most_2"] = max(load_before[0], load_after[0]) <= 2
    return out


def store_units(store: Path) -> int:
    """Units the store holds, all strategies together."""
    from convlab.store import Store

    return Store(store).frame("units").height


def tiled_views(system: object, units: int) -> dict:
    """The system's views over LoCoMo tiled to about ``units`` units in all (hash vectors)."""
    from convlab.build import build_indexes
    from convlab.embed import HashEmbedder
    from convlab.index.bm25 import BM25Index
    from convlab.loaders import load
    from convlab.specs import UnitSpec
    from convlab.store.search import units_only_index
    from convlab.systems.search import HeldView

    views = system.views  # type: ignore[attr-defined]
    strategies = list(dict.fromkeys(v.strategy for v in views))
    dense = {v.strategy for v in views if v.retrieval.needs_vectors}
    emb = HashEmbedder(384)
    specs = [UnitSpec(s) for s in strategies]
    built = build_indexes(load(locomo_path()), specs, embedder=emb, dense=dense)
    per_copy = sum(b.units.height for b in built.values())
    copies = max(1, -(-units // per_copy))  # at least ``units`` in all
    held = {}
    for s, b in built.items():
        parts = []
        for i in range(copies):
            p = f"c{i}-"
            parts.append(
                b.units.with_columns(
                    (p + pl.col("unit_id")).alias("unit_id"),
                    (p + pl.col("conversation_id")).alias("conversation_id"),
                    pl.col("doc_ids").list.eval(p + pl.element()).alias("doc_ids"),
                )
            )
        tiled = pl.concat(parts)
        bm25 = BM25Index.build(tiled)
        if s in dense:
            vectors = emb.encode(tiled["text"].to_list())
            index = VectorIndex.build(tiled, vectors, model_id=emb.model_id, spec=IndexSpec("flat"))
        else:
            index = units_only_index(tiled, 384)
        held[s] = HeldView(index, bm25, s in dense)
    return held


def warm_search(system: object, units: int, backend: str, repeat: int) -> dict:
    """The panel's (and an MCP server's) search: views loaded once, then query after query."""
    from convlab.embed import make_embedder
    from convlab.systems.search import search_system

    held = tiled_views(system, units)
    query_embedder = make_embedder("minilm", backend)
    query_embedder.encode(["warm up"])
    searchers: dict = {}  # kept between queries, as the panel and a store's search keep them
    load_before = _load()
    total, embed_ms = [], []
    for r in range(repeat + 1):
        for q in QUERIES:
            text = f"{q} {r}"  # a new text each time: nothing is served from a memo
            t = time.perf_counter()
            query_embedder.encode([text])
            e = time.perf_counter() - t
            frame = pl.DataFrame({"query_id": ["q"], "text": [text]})
            t = time.perf_counter()
            search_system(
                held,
                frame,
                system,  # type: ignore[arg-type]
                embedder=query_embedder,
                k=10,
                searchers=searchers,
            )
            if r:  # the first round warms the caches
                total.append((time.perf_counter() - t) * 1000)
                embed_ms.append(e * 1000)
    return {
        "units": {s: h.vector_index.units.height for s, h in held.items()},
        "units_total": sum(h.vector_index.units.height for h in held.values()),
        "query_backend": backend,
        "queries": len(total),
        "p50_ms": float(np.percentile(total, 50)),
        "p90_ms": float(np.percentile(total, 90)),
        "query_embedding_p50_ms": float(np.percentile(embed_ms, 50)),
        "load_before": load_before,
        "load_after": _load(),
    }


def system_bench(args: argparse.Namespace) -> dict:
    """The ``system`` part of the result (see the module docstring)."""
    from convlab.systems import resolve_system

    system = resolve_system(args.system)
    out: dict = {"system": system.as_dict()}
    if args.store is not None:
        out["store"] = {"path": str(args.store), "units": store_units(args.store)}
        out["cli"] = {
            "served": cli_end_to_end(args.store, args.system, args.repeat, served=True),
            "in_process": cli_end_to_end(args.store, args.system, args.in_process, served=False),
        }
        print("cli", json.dumps(out["cli"]))
    if args.system_units:
        out["warm"] = warm_search(system, args.system_units, args.backend, args.repeat)
        print("warm", json.dumps(out["warm"]))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.bench_search", description=__doc__)
    p.add_argument("--out", type=Path, default=Path("runs/bench"))
    p.add_argument("--sizes", default="10000,100000,1000000")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--hnsw-max", type=int, default=1_000_000, help="largest size to build HNSW")
    p.add_argument("--system-units", type=int, default=0, help="units of the warm system search")
    p.add_argument("--system", default=None, help="the system (default: the default system)")
    p.add_argument("--store", type=Path, default=None, help="a store for `convlab search`")
    p.add_argument("--backend", default="onnx", help="query embedding backend (warm search)")
    p.add_argument("--repeat", type=int, default=3, help="rounds of the 10 queries")
    p.add_argument(
        "--in-process", type=int, default=1, help="rounds without a server, with --store (1)"
    )
    args = p.parse_args(argv)
    if args.system_units or args.store is not None:
        record = {"system": system_bench(args), "machine": {"cpus": os.cpu_count()}}
        args.out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(args.out / "bench_search_system.json", json.dumps(record, indent=1))
        print(json.dumps(record, indent=1))
        return 0
    base, emb = base_vectors()
    qlat = []
    for _ in range(20):
        t = time.perf_counter()
        emb.encode(["when did we talk about the support group?"])
        qlat.append((time.perf_counter() - t) * 1000)
    result: dict = {"query_embedding_ms_median": float(np.median(qlat)), "sizes": {}}
    k = 10
    for size in [int(s) for s in args.sizes.split(",")]:
        vectors = tile(base, size, seed=1)
        queries = tile(base, args.queries, seed=2)
        units = schema.frame({"unit_id": [f"u{i}" for i in range(size)]}, schema.UNITS)
        row: dict = {}
        t = time.perf_counter()
        flat = VectorIndex.build(units, vectors, model_id=emb.model_id, spec=IndexSpec("flat"))
        row["flat_build_s"] = time.perf_counter() - t
        exact = flat.search(queries, k)[1]
        lat_np = latencies(numpy_scan(vectors, k), queries)
        lat_flat = latencies(partial(flat.search, k=k), queries)
        row["numpy_p50_ms"] = float(np.percentile(lat_np, 50))
        row["flat_p50_ms"] = float(np.percentile(lat_flat, 50))
        row["flat_p99_ms"] = float(np.percentile(lat_flat, 99))
        row["flat_over_numpy_p50"] = row["flat_p50_ms"] / row["numpy_p50_ms"]
        lat_faiss = latencies(partial(flat._faiss.search, k=k), queries)
        row["faiss_indexflatip_p50_ms"] = float(np.percentile(lat_faiss, 50))
        if size <= args.hnsw_max:
            t = time.perf_counter()
            hnsw = VectorIndex.build(units, vectors, model_id=emb.model_id, spec=IndexSpec("hnsw"))
            row["hnsw_build_s"] = time.perf_counter() - t
            row["hnsw"] = {}
            for ef in (16, 64, 128, 256):
                cast(Any, hnsw._faiss).hnsw.efSearch = ef
                got = hnsw.search(queries, k)[1]
                pairs = zip(got, exact, strict=True)
                recall = float(np.mean([len(set(a) & set(b)) / k for a, b in pairs]))
                lat = latencies(partial(hnsw.search, k=k), queries)
                row["hnsw"][str(ef)] = {
                    "recall@10": recall,
                    "p50_ms": float(np.percentile(lat, 50)),
                    "p99_ms": float(np.percentile(lat, 99)),
                }
        else:
            row["hnsw"] = "skipped (--hnsw-max)"
        result["sizes"][str(size)] = row
        print(size, json.dumps(row))
    result["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "polars": pl.__version__,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out / "bench_search.json", json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
