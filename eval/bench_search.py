"""Benchmark FAISS search: exact against a plain numpy scan, HNSW latency and recall.

``python -m eval.bench_search --out DIR [--sizes 10000,100000,1000000]`` writes
``DIR/bench_search.json``. Vectors are real MiniLM embeddings of LoCoMo utterances, tiled with
small Gaussian noise and renormalised (closer to real units than uniform random vectors).
Targets: exact within 1.2x of numpy; at 100k units HNSW p50 < 1 ms with recall@10 >= 0.99.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import polars as pl

from convlab import schema
from convlab.atomic import write_text_atomic
from convlab.embed import MiniLMEmbedder
from convlab.index import VectorIndex
from convlab.paths import locomo_path


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


def latencies(fn, queries: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    out = []
    for q in queries:
        t = time.perf_counter()
        fn(q[None, :])
        out.append((time.perf_counter() - t) * 1000)
    return np.array(out)


def numpy_scan(vectors: np.ndarray, k: int):  # type: ignore[no-untyped-def]
    def run(q: np.ndarray) -> np.ndarray:
        s = vectors @ q[0]
        top = np.argpartition(-s, k)[:k]
        return top[np.argsort(-s[top])]

    return run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.bench_search", description=__doc__)
    p.add_argument("--out", type=Path, default=Path("runs/bench"))
    p.add_argument("--sizes", default="10000,100000,1000000")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--hnsw-max", type=int, default=1_000_000, help="largest size to build HNSW")
    args = p.parse_args(argv)
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
        flat = VectorIndex.build(units, vectors, model_id=emb.model_id, kind="flat")
        row["flat_build_s"] = time.perf_counter() - t
        exact = flat.search(queries, k)[1]
        lat_np = latencies(numpy_scan(vectors, k), queries)
        lat_flat = latencies(lambda q, ix=flat: ix.search(q, k), queries)
        row["numpy_p50_ms"] = float(np.percentile(lat_np, 50))
        row["flat_p50_ms"] = float(np.percentile(lat_flat, 50))
        row["flat_p99_ms"] = float(np.percentile(lat_flat, 99))
        row["flat_over_numpy_p50"] = row["flat_p50_ms"] / row["numpy_p50_ms"]
        lat_faiss = latencies(lambda q, ix=flat: ix._faiss.search(q, k), queries)
        row["faiss_indexflatip_p50_ms"] = float(np.percentile(lat_faiss, 50))
        if size <= args.hnsw_max:
            t = time.perf_counter()
            hnsw = VectorIndex.build(units, vectors, model_id=emb.model_id, kind="hnsw")
            row["hnsw_build_s"] = time.perf_counter() - t
            row["hnsw"] = {}
            for ef in (16, 64, 128, 256):
                hnsw._faiss.hnsw.efSearch = ef
                got = hnsw.search(queries, k)[1]
                pairs = zip(got, exact, strict=True)
                recall = float(np.mean([len(set(a) & set(b)) / k for a, b in pairs]))
                lat = latencies(lambda q, ix=hnsw: ix.search(q, k), queries)
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
