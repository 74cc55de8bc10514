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
from typing import Any

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


POOL_MAX_TOKENS = (256, 192, 128, 96, 64, 48, 32)
"""Unit sizes of the text pool: each strategy's units of the chunks that fit each size."""


def _dated(corpus: convlab.Corpus, chunks: pl.DataFrame) -> list[str]:
    """Each chunk as a dated utterance: ``"(8 May 2023) Caroline: Good to see you!"``.

    The speaker is the message's (its role where the format names none); a chunk already
    starting with ``"Speaker: "`` is not given it twice.
    """
    who = corpus.messages.select(
        "conversation_id",
        "message_index",
        pl.coalesce("speaker", "role").alias("who"),
    )
    rows = chunks.join(who, on=["conversation_id", "message_index"], how="left")
    out = []
    for ts, who_, text in zip(rows["timestamp"], rows["who"], rows["text"], strict=True):
        day = f"({ts.day} {ts:%B %Y}) " if ts is not None else ""
        speaker = who_ or ""
        head = f"{speaker}: " if speaker and not text.startswith(f"{speaker}: ") else ""
        out.append(f"{day}{head}{text}")
    return out


def unit_texts(n: int, seed: int = 0) -> tuple[list[str], dict[str, int]]:
    """``n`` distinct real texts (a seeded sample of the pool) and what each source added.

    The pool, in this order, each text kept once (its first source counts it): for LoCoMo and
    then the transcript samples, the units of every strategy at each size of
    :data:`POOL_MAX_TOKENS` (of the chunks that fit that size), then every chunk of both as a
    dated utterance (:func:`_dated`). With fewer than ``n`` distinct texts, all are returned.
    """
    pool: dict[str, None] = {}
    added: dict[str, int] = {}

    def add(key: str, texts: list[str]) -> None:
        before = len(pool)
        pool.update(dict.fromkeys(texts))
        added[key] = len(pool) - before

    loaded = []
    for name, source in (("locomo", locomo_path()), ("transcripts", shared_dir() / "transcripts")):
        corpus = convlab.load(source)
        chunks = convlab.chunks(corpus, convlab.ContentPolicy())
        loaded.append((name, corpus, chunks))
        for max_tokens in POOL_MAX_TOKENS:
            # the chunks that fit a unit of this size (a longer one cannot be packed)
            fit = chunks.filter(pl.col("n_tokens") <= max_tokens - 2)
            texts: list[str] = []
            for strategy in sorted(convlab.STRATEGIES):
                try:
                    texts += convlab.units(fit, strategy, max_tokens)["text"].to_list()
                except ValueError:  # a strategy that cannot pack these chunks: left out
                    continue
            add(f"{name}:units@{max_tokens}", texts)
    for name, corpus, chunks in loaded:
        add(f"{name}:dated_chunks", _dated(corpus, chunks))
    texts = list(pool)
    random.Random(seed).shuffle(texts)
    return texts[:n], added


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


def loadavg() -> list[float]:
    """The machine's 1, 5 and 15-minute load averages (``/proc/loadavg``; empty elsewhere)."""
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def summary(rounds: list[dict[str, Any]], actors: int) -> dict[str, float]:
    """The figures of the rounds done so far, summed over rounds (see the module docstring)."""
    n = sum(r["n"] for r in rounds)
    serial_s = sum(r["serial_s"] for r in rounds)
    job_s = sum(r["ray_job_s"] for r in rounds)
    busy = sum(r["ray_actor_busy_s"] for r in rounds)
    start = sum(r["ray_actor_start_s"] for r in rounds)
    batches = sum(r["ray_batches"] for r in rounds)
    overhead = job_s - busy / actors
    return {
        "n_units": n,
        "serial_s": serial_s,
        "serial_texts_per_s": n / serial_s,
        "ray_job_s": job_s,
        "ray_texts_per_s": n / job_s,
        "ratio_ray_over_serial_throughput": serial_s / job_s,
        "ray_batches": batches,
        "ray_actor_busy_s": busy,
        "texts_per_s_per_actor": n / busy,
        "ray_actor_start_s": start,
        "ray_overhead_s": overhead,
        "overhead_per_batch_s": overhead / (batches / actors),
        "overhead_per_batch_without_actor_start_s": (overhead - start / actors)
        / (batches / actors),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.bench_ray", description=__doc__)
    p.add_argument("--n", type=int, default=100_000, help="units embedded by each path")
    p.add_argument("--actors", type=int, default=2)
    p.add_argument("--rounds", type=int, default=10, help="slices of the units, halves alternating")
    p.add_argument("--batch-size", type=int, default=256, help="texts per map_batches call")
    p.add_argument("--block-rows", type=int, default=256, help="texts per Dataset block")
    p.add_argument("--out", type=Path, default=Path("runs/bench"))
    args = p.parse_args(argv)
    if args.n < 1 or args.actors < 1 or args.rounds < 1:
        p.error("--n, --actors and --rounds must be at least 1")
    command = "python -m eval.bench_ray " + " ".join(sys.argv[1:] if argv is None else argv)
    load_at_start = loadavg()

    t = time.perf_counter()
    texts, pool = unit_texts(args.n)
    prepare_s = time.perf_counter() - t
    n = len(texts)
    print(f"{n} of {sum(pool.values())} distinct texts ({prepare_s:.0f} s to derive)", flush=True)
    import torch

    engine = RayEngine(actors=args.actors, batch_size=args.batch_size, block_rows=args.block_rows)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"bench_ray_{args.n}.json"
    rounds: list[dict[str, Any]] = []
    max_diff, min_cos = 0.0, 1.0
    with tempfile.TemporaryDirectory() as tmp:
        serial_model = MiniLMEmbedder(show_progress=False)
        t = time.perf_counter()
        serial_model.encode(["warm up"])  # the model loads outside the timed rounds
        serial_load_s = time.perf_counter() - t
        serial_cache = CachedEmbedder(serial_model, Path(tmp) / "serial")
        ray_cache = CachedEmbedder(MiniLMEmbedder(show_progress=False), Path(tmp) / "ray")
        bounds = np.linspace(0, n, args.rounds + 1).astype(int)
        try:
            for r in range(args.rounds):
                part = texts[bounds[r] : bounds[r + 1]]
                load_before = loadavg()
                done: dict[str, tuple[np.ndarray, float]] = {}
                # alternate which half goes first, so a change of the machine's load over the
                # run falls on both halves alike
                for half in ("serial", "ray") if r % 2 == 0 else ("ray", "serial"):
                    init_before = engine.init_seconds
                    t = time.perf_counter()
                    if half == "serial":
                        vecs = LocalEngine().embed(part, serial_cache)
                    else:
                        vecs = engine.embed(part, ray_cache)
                    # the wall time of the call, through the cache as the serial half's, less
                    # Ray's start-up when this call started the instance (reported apart)
                    wall = time.perf_counter() - t - (engine.init_seconds - init_before)
                    done[half] = (vecs, wall)
                job = engine.last_job
                serial_vecs, serial_s = done["serial"]
                ray_vecs, ray_s = done["ray"]
                max_diff = max(max_diff, float(np.max(np.abs(ray_vecs - serial_vecs))))
                min_cos = min(min_cos, float(np.min(np.sum(ray_vecs * serial_vecs, axis=1))))
                rounds.append(
                    {
                        "n": len(part),
                        "first": "serial" if r % 2 == 0 else "ray",
                        "serial_s": serial_s,
                        "ray_job_s": ray_s,
                        "ray_job_inside_engine_s": job.seconds,
                        "ray_actor_busy_s": job.encode_seconds,
                        "ray_actor_start_s": job.start_seconds,
                        "ray_batches": job.batches,
                        "ray_actor_processes": job.actor_processes,
                        "ray_threads_per_actor": job.threads_per_actor,
                        "loadavg_before": load_before,
                        "loadavg_after": loadavg(),
                    }
                )
                result = {
                    "command": command,
                    "complete": len(rounds) == args.rounds,
                    "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
                    "loadavg_start": load_at_start,
                    "loadavg_end": loadavg(),
                    "pool": {"distinct_texts": sum(pool.values()), "added_by_source": pool},
                    "mean_chars": float(np.mean([len(x) for x in texts])),
                    "prepare_s": prepare_s,
                    "actors": args.actors,
                    "engine": engine.describe(),
                    "serial_torch_threads": torch.get_num_threads(),
                    "serial_model_load_s": serial_load_s,
                    "ray_init_s": engine.init_seconds,
                    **summary(rounds, args.actors),
                    "max_abs_diff_vs_serial": max_diff,
                    "min_cosine_vs_serial": min_cos,
                    "embedded": {
                        "serial": serial_cache.stats.embedded,
                        "ray": ray_cache.stats.embedded,
                    },
                    "rounds": rounds,
                    "projection_note": "projected on paper from the measured texts/s per "
                    "actor, assuming linear scaling (one actor per CPU worker); not measured",
                    "projection": projection(summary(rounds, args.actors)["texts_per_s_per_actor"]),
                }
                write_text_atomic(out, json.dumps(result, indent=1))
                print(json.dumps(rounds[-1]), flush=True)
        finally:
            engine.close()
    print(json.dumps({k: v for k, v in result.items() if k not in ("projection", "rounds")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
