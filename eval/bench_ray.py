"""Benchmark the Ray engine: the same N units embedded serially and through Ray, in one run.

``python -m eval.bench_ray --n 100000 --actors 2 --out runs/bench`` writes
``runs/bench/bench_ray.json``. The texts are distinct unit texts of every strategy over LoCoMo at
max_tokens 256, 128 and 64 (of the chunks that fit each), then the real transcript samples: a
seeded sample of N. Each path starts from an empty embedding cache:

- serial: the ``local`` engine (all-MiniLM-L6-v2 in this process, torch's own threads);
- ray: the ``ray`` engine with ``--actors`` actors of one CPU each on a local Ray instance.

Reported: wall seconds of each, their ratio, texts/s per actor (texts / the actors' summed busy
seconds inside ``encode``), the overhead per batch (Ray's wall time beyond the ideal
``busy / actors``, per batch an actor ran), Ray's start-up time apart, the largest difference
between the two paths' vectors, and a projection (on paper, from the measured per-actor rate) of
hours for 10M and 100M units on 8, 32 and 128 CPU workers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

import convlab
from convlab.atomic import write_text_atomic
from convlab.embed import CachedEmbedder, MiniLMEmbedder
from convlab.engines.local import LocalEngine
from convlab.engines.ray import RayEngine
from convlab.paths import locomo_path, shared_dir

PROJECT_UNITS = (10_000_000, 100_000_000)
PROJECT_WORKERS = (8, 32, 128)


def unit_texts(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct unit texts (a seeded sample), from LoCoMo and then the transcript samples."""
    pool: dict[str, None] = {}
    sources = [locomo_path(), shared_dir() / "transcripts"]
    for source in sources:
        corpus = convlab.load(source)
        chunks = convlab.chunks(corpus, convlab.ContentPolicy())
        for max_tokens in (256, 128, 64):
            # the chunks that fit a unit of this size (a longer one cannot be packed)
            fit = chunks.filter(pl.col("n_tokens") <= max_tokens - 2)
            for strategy in sorted(convlab.STRATEGIES):
                try:
                    u = convlab.units(fit, strategy, max_tokens)
                except ValueError:  # a strategy that cannot pack these chunks: left out
                    continue
                pool.update(dict.fromkeys(u["text"].to_list()))
        if len(pool) >= n:
            break
    texts = list(pool)
    random.Random(seed).shuffle(texts)
    return texts[:n]


def projection(rate_per_worker: float) -> list[dict[str, float]]:
    """Hours to embed each size on each worker count at ``rate_per_worker`` texts/s (linear)."""
    return [
        {
            "units": units,
            "workers": workers,
            "hours": units / (rate_per_worker * workers) / 3600,
        }
        for units in PROJECT_UNITS
        for workers in PROJECT_WORKERS
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.bench_ray", description=__doc__)
    p.add_argument("--n", type=int, default=100_000, help="units embedded by each path")
    p.add_argument("--actors", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=256, help="texts per map_batches call")
    p.add_argument("--block-rows", type=int, default=1024, help="texts per Dataset block")
    p.add_argument("--out", type=Path, default=Path("runs/bench"))
    args = p.parse_args(argv)
    if args.n < 1 or args.actors < 1:
        p.error("--n and --actors must be at least 1")

    t = time.perf_counter()
    texts = unit_texts(args.n)
    prepare_s = time.perf_counter() - t
    n = len(texts)
    print(f"{n} distinct unit texts ({prepare_s:.0f} s to derive)", flush=True)
    engine = RayEngine(actors=args.actors, batch_size=args.batch_size, block_rows=args.block_rows)
    with tempfile.TemporaryDirectory() as tmp:
        serial_cache = CachedEmbedder(MiniLMEmbedder(show_progress=False), Path(tmp) / "serial")
        t = time.perf_counter()
        serial = LocalEngine().embed(texts, serial_cache)
        serial_s = time.perf_counter() - t
        print(f"serial: {serial_s:.1f} s ({n / serial_s:.1f} texts/s)", flush=True)

        ray_cache = CachedEmbedder(MiniLMEmbedder(show_progress=False), Path(tmp) / "ray")
        try:
            t = time.perf_counter()
            on_ray = engine.embed(texts, ray_cache)
            ray_s = time.perf_counter() - t
        finally:
            engine.close()
    job = engine.last_job
    job_s = ray_s - engine.init_seconds
    busy = job.encode_seconds
    per_actor = n / busy
    overhead = job_s - busy / job.actors
    result = {
        "command": "python -m eval.bench_ray " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "n_units": n,
        "actors": job.actors,
        "engine": engine.describe(),
        "serial_s": serial_s,
        "serial_texts_per_s": n / serial_s,
        "ray_init_s": engine.init_seconds,
        "ray_job_s": job_s,
        "ray_texts_per_s": n / job_s,
        "ratio_ray_over_serial_throughput": serial_s / job_s,
        "ray_batches": job.batches,
        "ray_actor_busy_s": busy,
        "texts_per_s_per_actor": per_actor,
        "ray_overhead_s": overhead,
        "overhead_per_batch_s": overhead / (job.batches / job.actors),
        "max_abs_diff_vs_serial": float(np.max(np.abs(on_ray - serial))),
        "min_cosine_vs_serial": float(np.min(np.sum(on_ray * serial, axis=1))),
        "embedded": {"serial": serial_cache.stats.embedded, "ray": ray_cache.stats.embedded},
        "projection_note": "projected on paper from the measured texts/s per actor, assuming "
        "linear scaling (one actor per CPU worker); not measured",
        "projection": projection(per_actor),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / "bench_ray.json"
    write_text_atomic(out, json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "projection"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
