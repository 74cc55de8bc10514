"""Benchmark the ``ivfpq`` index at millions of units: build, memory, disk, latency, recall.

``python -m eval.bench_ivfpq --size 1000000 [--out runs/bench]`` writes
``runs/bench/bench_ivfpq_<size>.json``.

Vectors are real-looking, generated shard by shard with a fixed seed so that no more than one
shard of float32 vectors is ever in memory: each unit is a real MiniLM vector of a LoCoMo
utterance (embedded once, cached as ``runs/bench/locomo_base.npy``) moved towards a second random
utterance by a weight ``w ~ U(0, mix)`` plus Gaussian noise ``sigma`` per dimension, renormalised.
The blend fills the space between real utterances (neighbours are not copies of one base, as
plain noise around a few thousand bases would make them), the noise makes every unit distinct.
Queries come from the same process with another seed and are not in the index.

Exact top-10 for the queries is computed in chunks from the float32 shards (BLAS product and a
partial sort), then the index is built with :meth:`VectorIndex.build_from_shards`, reloaded in
this process (RSS before and after the load: the memory the index needs to serve), and searched
one query at a time. Targets at 10M: index memory <= 2 GB, recall@10 >= 0.95 with re-scoring,
p50 < 20 ms.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import polars as pl

from convlab import schema
from convlab.atomic import write_text_atomic
from convlab.index import VectorIndex
from convlab.index.shards import ShardLoader
from convlab.paths import locomo_path
from convlab.specs import IndexSpec

K = 10


def unit_frame(rows: range) -> pl.DataFrame:
    """Units of these rows with what a search reads of its hits: id, conversation, docs, text.

    A conversation holds 100 units, a doc 10; the text is short (the units' texts of a real
    store weigh more on disk, not in memory: only the hits' rows are read).
    """
    return schema.frame(
        {
            "unit_id": [f"u{r}" for r in rows],
            "conversation_id": [f"c{r // 100}" for r in rows],
            "doc_ids": [[f"c{r // 100}:t{r // 10}"] for r in rows],
            "text": [f"unit {r} of conversation {r // 100}" for r in rows],
        },
        schema.UNITS,
    )


def base_vectors(cache: Path, data: Path) -> np.ndarray:
    """MiniLM vectors of LoCoMo's distinct utterances, embedded once and cached."""
    if cache.is_file():
        return np.load(cache)
    from convlab.embed import MiniLMEmbedder

    d = json.loads(data.read_text())
    texts = [
        u["text"]
        for s in d
        for k, v in s["conversation"].items()
        if k.startswith("session_") and isinstance(v, list)
        for u in v
    ]
    vectors = MiniLMEmbedder(show_progress=False).encode(list(dict.fromkeys(texts)))
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp.npy")
    np.save(tmp, vectors.astype(np.float32))
    os.replace(tmp, cache)
    return vectors.astype(np.float32)


def generate(
    base: np.ndarray, size: int, seed: int, shard: int, mix: float, sigma: float
) -> np.ndarray:
    """Rows ``[shard * size, ...)`` of the synthetic corpus with this seed (deterministic)."""
    rng = np.random.default_rng([seed, shard])
    i = rng.integers(0, len(base), size)
    j = rng.integers(0, len(base), size)
    w = rng.uniform(0, mix, size).astype(np.float32)[:, None]
    v = base[i] * (1 - w) + base[j] * w
    v += rng.standard_normal((size, base.shape[1]), dtype=np.float32) * np.float32(sigma)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def memory() -> dict[str, int]:
    """This process's memory from /proc (kB): RSS, its anonymous and file-backed parts, peak."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def reset_peak() -> None:
    """Reset VmHWM (Linux: writing 5 to clear_refs)."""
    Path("/proc/self/clear_refs").write_text("5")


def exact_top(shard_paths: list[Path], queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``K`` rows per query over the float32 shards, chunk by chunk."""
    best_s = np.full((len(queries), K), -np.inf, dtype=np.float32)
    best_i = np.full((len(queries), K), -1, dtype=np.int64)
    offset = 0
    for path in shard_paths:
        v = np.load(path, mmap_mode="r")
        for a in range(0, v.shape[0], 50_000):
            chunk = np.asarray(v[a : a + 50_000])
            sims = queries @ chunk.T
            top = np.argpartition(-sims, K - 1, axis=1)[:, :K]
            s = np.concatenate([best_s, np.take_along_axis(sims, top, 1)], axis=1)
            i = np.concatenate([best_i, top + offset + a], axis=1)
            keep = np.argsort(-s, axis=1, kind="stable")[:, :K]
            best_s, best_i = np.take_along_axis(s, keep, 1), np.take_along_axis(i, keep, 1)
        offset += v.shape[0]
    return best_s, best_i


def _settings(nprobes: list[int], rescores: str) -> list[tuple[int, int]]:
    """Every (nprobe, rescore) of the sweep, nprobe first."""
    return [(n, int(r)) for n in nprobes for r in rescores.split(",")]


def recall(got: np.ndarray, exact: np.ndarray) -> float:
    """Mean over queries of |top-k found ∩ exact top-k| / k."""
    return float(np.mean([len(set(a) & set(b)) / K for a, b in zip(got, exact, strict=True)]))


def latencies(index: VectorIndex, queries: np.ndarray) -> np.ndarray:
    """Milliseconds per single-query search, one query at a time."""
    out = []
    for q in queries:
        t = time.perf_counter()
        index.search(q[None, :], K)
        out.append((time.perf_counter() - t) * 1000)
    return np.array(out)


def serve(index_dir: Path, queries: Path) -> dict[str, Any]:
    """In this (fresh) process: open the index, answer every query with its hits' units.

    Each query's top-``K`` rows are searched, then only those rows' units (unit id,
    conversation, docs, text) are read: what a search hands back. RSS (and its anonymous and
    file-backed parts) before and after the open and after the queries; ``VmHWM`` is the peak.
    """
    from convlab.index import VectorIndex

    q = np.load(queries)
    before = memory()
    t = time.perf_counter()
    index = VectorIndex.load(index_dir)
    open_s = time.perf_counter() - t
    opened = memory()
    columns = ["unit_id", "conversation_id", "doc_ids", "text"]
    t = time.perf_counter()
    read = 0
    for row in q:
        found = index.search(row[None, :], K)[1][0]
        hits = index.unit_rows(found[found >= 0], columns)
        read += hits.height
    search_s = time.perf_counter() - t
    return {
        "before": before,
        "opened": opened,
        "searched": memory(),
        "open_s": open_s,
        "queries": len(q),
        "hit_units_read": read,
        "ms_per_query_with_units": 1000 * search_s / max(len(q), 1),
    }


def serve_memory(index_dir: Path, queries: Path) -> dict[str, Any]:
    """:func:`serve` in a fresh process; the deltas of the open, peak RSS in MB."""
    out = subprocess.run(
        [sys.executable, "-m", "eval.bench_ivfpq", "--serve", str(index_dir), str(queries)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    m = json.loads(out.strip().splitlines()[-1])
    m["open_rss_delta_kb"] = m["opened"]["VmRSS"] - m["before"]["VmRSS"]
    m["open_anon_delta_kb"] = m["opened"]["RssAnon"] - m["before"]["RssAnon"]
    m["rss_mb_after_open"] = round(m["opened"]["VmRSS"] / 1024)
    m["rss_mb_after_queries"] = round(m["searched"]["VmRSS"] / 1024)
    m["anon_mb_after_queries"] = round(m["searched"]["RssAnon"] / 1024)
    m["peak_rss_mb"] = round(m["searched"]["VmHWM"] / 1024)
    m["within_1gb"] = m["peak_rss_mb"] <= 1024
    return m


def du(path: Path) -> int:
    """Bytes of the files under ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve"]:  # the fresh process of serve_memory: --serve INDEX QUERIES
        print(json.dumps(serve(Path(argv[1]), Path(argv[2]))))
        return 0
    p = argparse.ArgumentParser(prog="python -m eval.bench_ivfpq", description=__doc__)
    p.add_argument("--size", type=int, required=True, help="units in the index")
    p.add_argument("--shard", type=int, default=250_000, help="units per shard")
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--out", type=Path, default=Path("runs/bench"))
    p.add_argument("--work", type=Path, default=Path("runs/ivfpq"), help="shards and index")
    p.add_argument(
        "--data", type=Path, default=None, help="locomo10.json (default: CONVLAB_DATA or ../shared)"
    )
    p.add_argument("--base-cache", type=Path, default=Path("runs/bench/locomo_base.npy"))
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--mix", type=float, default=0.5, help="largest blend weight of a 2nd base")
    p.add_argument("--sigma", type=float, default=0.02, help="Gaussian noise per dimension")
    p.add_argument("--nlist", type=int, default=2048)
    p.add_argument("--m", type=int, default=48)
    p.add_argument("--nbits", type=int, default=8)
    p.add_argument("--opq", action="store_true")
    p.add_argument("--train-size", type=int, default=None)
    p.add_argument("--nprobes", default="8,16,32,64")
    p.add_argument("--rescores", default="1,10,20")
    p.add_argument(
        "--threads", type=int, default=1, help="FAISS threads for the build (1: see the report)"
    )
    p.add_argument("--keep-shards", action="store_true")
    p.add_argument(
        "--no-sweep", action="store_true", help="build and measure memory only (no recall sweep)"
    )
    p.add_argument(
        "--reuse-index", action="store_true", help="measure the index already in --work (no build)"
    )
    args = p.parse_args(argv)

    faiss.omp_set_num_threads(args.threads)
    base = base_vectors(args.base_cache, locomo_path(args.data))
    work = args.work / f"n{args.size}"
    shards_dir, index_dir = work / "shards", work / "index"
    shards_dir.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "size": args.size,
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "base_vectors": len(base),
        "load_avg_start": os.getloadavg(),
    }

    t = time.perf_counter()
    paths = []
    for s, a in enumerate(range(0, args.size, args.shard)):
        n = min(args.shard, args.size - a)
        path = shards_dir / f"shard-{s:05d}.npy"
        if not path.is_file():
            tmp = path.with_suffix(".tmp.npy")
            np.save(tmp, generate(base, n, args.seed, s, args.mix, args.sigma))
            os.replace(tmp, path)
        paths.append(path)
    result["generate_s"] = time.perf_counter() - t
    queries = generate(base, args.queries, args.seed + 1_000_003, 0, args.mix, args.sigma)

    exact = None
    if not args.no_sweep:
        t = time.perf_counter()
        exact_s, exact = exact_top(paths, queries)
        result["exact_ground_truth_s"] = time.perf_counter() - t
        # how hard the neighbours are: the exact 1st and 10th cosines and the gap between them
        result["exact_cosine"] = {
            "top1_mean": float(exact_s[:, 0].mean()),
            "top10_mean": float(exact_s[:, K - 1].mean()),
            "gap_1_10_median": float(np.median(exact_s[:, 0] - exact_s[:, K - 1])),
            "gap_10_11_note": "ground truth from the float32 shards, not the float16 copy",
        }

    offsets = np.cumsum([0] + [np.load(pp, mmap_mode="r").shape[0] for pp in paths])

    def loader(i: int, path: Path) -> ShardLoader:
        def load() -> tuple[pl.DataFrame, np.ndarray]:
            v = np.load(path)
            rows = range(int(offsets[i]), int(offsets[i]) + len(v))
            return unit_frame(rows), v

        return load

    loaders = [loader(i, pp) for i, pp in enumerate(paths)]
    params: dict[str, Any] = {"nlist": args.nlist, "m": args.m, "nbits": args.nbits}
    params |= {"opq": args.opq, "train_size": args.train_size}
    gc.collect()
    reset_peak()
    before = memory()
    t = time.perf_counter()
    if args.reuse_index and (index_dir / "manifest.json").is_file():
        index = VectorIndex.load(index_dir, model_id="bench")
        result["build_s"] = None  # reused: built by an earlier run
    else:
        index = VectorIndex.build_from_shards(
            loaders, index_dir, model_id="bench", spec=IndexSpec("ivfpq", params)
        )
        result["build_s"] = time.perf_counter() - t
    result["build_memory_kb"] = {"before": before, "after": memory()}
    result["manifest_params"] = index.manifest.params
    del index
    gc.collect()
    before = memory()
    t = time.perf_counter()
    index = VectorIndex.load(index_dir, model_id="bench")
    result["load_s"] = time.perf_counter() - t
    after = memory()
    result["index_memory_kb"] = {
        "before_load": before,
        "after_load": after,
        "rss_delta": after["VmRSS"] - before["VmRSS"],
        "anon_delta": after["RssAnon"] - before["RssAnon"],
    }
    result["faiss_index_bytes"] = (index_dir / "index.faiss").stat().st_size
    result["disk_bytes"] = {f.name: f.stat().st_size for f in index_dir.iterdir()}
    result["disk_bytes_total"] = du(index_dir)

    qpath = work / "queries.npy"
    np.save(qpath, queries)
    result["serve_memory_fresh_process_kb"] = serve_memory(index_dir, qpath)
    faiss.omp_set_num_threads(1)  # single queries: no thread pool to wake
    sweep = {}
    nprobes = [int(x) for x in args.nprobes.split(",")]
    for nprobe, rescore in _settings(nprobes, args.rescores) if exact is not None else []:
        index.set_search(nprobe=nprobe, rescore=rescore)
        got = index.search(queries, K)[1]
        lat = latencies(index, queries)
        sweep[f"nprobe={nprobe},rescore={rescore}"] = {
            "nprobe": nprobe,
            "rescore": rescore,
            "recall@10": recall(got, exact) if exact is not None else float("nan"),
            "p50_ms": float(np.percentile(lat, 50)),
            "p99_ms": float(np.percentile(lat, 99)),
            "mean_ms": float(lat.mean()),
        }
        print(args.size, json.dumps(sweep[f"nprobe={nprobe},rescore={rescore}"]), flush=True)
    result["search"] = sweep
    result["memory_after_search_kb"] = memory()
    result["load_avg_end"] = os.getloadavg()
    result["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "faiss": faiss.__version__,
        "numpy": np.__version__,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"bench_ivfpq_{args.size}.json"
    write_text_atomic(out, json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "search"}, indent=1))
    if not args.keep_shards:
        shutil.rmtree(shards_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
