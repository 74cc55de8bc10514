"""Benchmark the ONNX backends against torch fp32 on LoCoMo's texts, in one run.

``python -m eval.bench_onnx --out DIR [--texts 5000] [--chunk 250] [--latency-runs 5]`` writes
``DIR/bench_onnx.json`` with:

- ``throughput``: texts/s of torch fp32, onnx fp32 and onnx-int8 on the same texts (sampled from
  LoCoMo's units of every strategy, whose ``message`` units are the utterances; sorted by
  length), timed chunk by chunk with the three backends alternating (the order rotates per
  chunk), so load from other processes falls on all three alike. Target: onnx-int8 >= 1.5x torch.
- ``quality``: cosine of each text's onnx-int8 and onnx fp32 vector to its torch vector (mean,
  minimum, percentiles). Targets: int8 mean >= 0.99; fp32 minimum >= 0.9999 (the condition for
  embedding queries with onnx fp32 against a store built by torch).
- ``search_agreement``: a store built from ``data/sample`` with torch, every sample query searched
  with torch and with onnx fp32 query vectors; the ranked unit ids must be identical.
- ``latency``: end-to-end ``convlab search`` wall time (fresh process each run, median of N) on
  that store, queries embedded by torch (``--backend torch``, the old path) and by the default
  (onnx fp32 for a torch store, no torch import). Target: under 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

import convlab
from convlab.atomic import write_text_atomic
from convlab.embed import MiniLMEmbedder, minilm_embedder
from convlab.paths import REPO_ROOT, locomo_path, sample_data_path

BACKENDS = ("torch", "onnx", "onnx-int8")


def locomo_texts(n: int, seed: int) -> list[str]:
    """``n`` distinct LoCoMo texts (every strategy's units, utterances included), by length."""
    corpus = convlab.load(locomo_path())
    chunks = convlab.chunks(corpus, convlab.ContentPolicy())
    pool: list[str] = []  # the ``message`` strategy's units are the utterances
    for strategy in sorted(convlab.STRATEGIES):
        units = convlab.units(chunks, strategy)
        pool.extend(units["text"].to_list())
    pool = sorted({t for t in pool if t.strip()})
    rng = random.Random(seed)
    return sorted(rng.sample(pool, min(n, len(pool))), key=len)


def throughput(texts: list[str], chunk: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    embedders = {
        "torch": MiniLMEmbedder(show_progress=False),
        "onnx": minilm_embedder("onnx"),
        "onnx-int8": minilm_embedder("onnx-int8"),
    }
    for emb in embedders.values():
        emb.encode(["warm up the model", "and load it"])
    seconds = dict.fromkeys(BACKENDS, 0.0)
    parts: dict[str, list[np.ndarray]] = {b: [] for b in BACKENDS}
    for i, start in enumerate(range(0, len(texts), chunk)):
        batch = texts[start : start + chunk]
        order = BACKENDS[i % 3 :] + BACKENDS[: i % 3]
        for b in order:
            t = time.perf_counter()
            parts[b].append(embedders[b].encode(batch))
            seconds[b] += time.perf_counter() - t
        print(f"chunk {i}: {', '.join(f'{b} {seconds[b]:.1f}s' for b in BACKENDS)}", flush=True)
    vectors = {b: np.vstack(parts[b]) for b in BACKENDS}
    rate = {b: len(texts) / seconds[b] for b in BACKENDS}
    return {
        "texts": len(texts),
        "chunk": chunk,
        "seconds": seconds,
        "texts_per_second": rate,
        "speedup_vs_torch": {b: rate[b] / rate["torch"] for b in BACKENDS},
    }, vectors


def cosine_summary(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    cos = (a * b).sum(axis=1)
    return {
        "mean": float(cos.mean()),
        "min": float(cos.min()),
        "p01": float(np.percentile(cos, 1)),
        "p05": float(np.percentile(cos, 5)),
        "median": float(np.median(cos)),
        "n": len(cos),
    }


def build_sample_store(store: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "convlab.app.cli",
        "index",
        str(sample_data_path() / "transcripts"),
    ]
    # a torch store (the reference), whose queries the onnx fp32 path embeds without torch
    argv = [*cmd, "--store", str(store), "--quiet", "--backend", "torch", "--system", "turn_pair"]
    subprocess.run(argv, check=True, env=_env())


def search_agreement(store: Path) -> dict[str, Any]:
    import polars as pl

    from convlab.retrieval.search import search_many
    from convlab.store import Store

    index = Store(store).index()
    queries = pl.read_ndjson(sample_data_path() / "queries.jsonl").select("query_id", "text")
    ranked = {}
    for b in ("torch", "onnx"):
        hits = search_many(index, queries, embedder=minilm_embedder(b))
        ranked[b] = {
            q: part.sort("rank")["unit_id"].to_list()
            for (q,), part in hits.group_by("query_id", maintain_order=True)
        }
    same = [q for q in ranked["torch"] if ranked["torch"][q] == ranked["onnx"].get(q)]
    return {"queries": len(ranked["torch"]), "identical_rankings": len(same), "k": 10}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def latency(store: Path, runs: int, query: str) -> dict[str, Any]:
    out: dict[str, Any] = {"query": query, "runs": runs}
    for label, extra in (("torch", ["--backend", "torch"]), ("default", [])):
        cmd = [
            sys.executable,
            "-m",
            "convlab.app.cli",
            "search",
            query,
            "--store",
            str(store),
            *extra,
        ]
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run(cmd, check=True, env=_env(), stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - t)
        out[label] = {"median_s": statistics.median(times), "all_s": times}
        print(f"latency {label}: median {statistics.median(times):.2f}s {times}", flush=True)
    return out


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(data, indent=1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.bench_onnx", description=__doc__)
    p.add_argument("--out", type=Path, default=Path("runs/bench"))
    p.add_argument("--texts", type=int, default=5000)
    p.add_argument("--chunk", type=int, default=250, help="texts per alternating timing")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--latency-runs", type=int, default=5)
    p.add_argument("--skip-throughput", action="store_true")
    args = p.parse_args(argv)
    result: dict[str, Any] = {
        "command": " ".join(["python -m eval.bench_onnx", *(argv or sys.argv[1:])]),
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor()},
        "load_average_at_start": os.getloadavg(),
        "versions": {
            p: metadata.version(p) for p in ("torch", "onnxruntime", "sentence-transformers")
        },
    }
    out = args.out / "bench_onnx.json"
    if not args.skip_throughput:
        texts = locomo_texts(args.texts, args.seed)
        result["throughput"], vectors = throughput(texts, args.chunk)
        result["quality"] = {
            "onnx-int8_vs_torch": cosine_summary(vectors["onnx-int8"], vectors["torch"]),
            "onnx_vs_torch": cosine_summary(vectors["onnx"], vectors["torch"]),
        }
        print(json.dumps(result["quality"], indent=1), flush=True)
        write_json(out, result)
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        build_sample_store(store)
        result["search_agreement"] = search_agreement(store)
        print(result["search_agreement"], flush=True)
        result["latency"] = latency(store, args.latency_runs, "why did the export test fail")
    result["load_average_at_end"] = os.getloadavg()
    write_json(out, result)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
