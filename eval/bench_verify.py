"""Benchmark the self-checking store: the cost of hashing a 1M-unit version vs an unchanged index.

``python -m eval.bench_verify --out DIR [--units 1000000]`` writes ``DIR/bench_verify.json``.

A real store is built from synthetic Claude Code sessions (``--sessions`` files of ``--turns``
turns in all, HashEmbedder(384): the vectors of all-MiniLM-L6-v2's size, no model); its frames
are then replicated (ids made unique) to ``--units`` units with random unit vectors and written as
a new version of the same store, so the transcripts on disk still match the manifest and an
``index`` of them is a real unchanged run. Timed, best of ``--repeat``, files in the page cache:

- ``write``: writing the version (frames, FAISS, vectors; sizes and SHA-256 recorded);
- ``open_sizes``: opening it (manifest checksum, every file's size);
- ``verify_hash``: :meth:`Store.verify` (SHA-256 of every file, the length of every vector);
- ``index_load`` / ``norm_check``: :meth:`Store.index` (unit-length check included) / that check;
- ``index_unchanged_<check>``: an unchanged ``Store.update`` with ``CHECK_ON_INDEX`` set to each
  of ``sizes``, ``sample``, ``full`` (in-process: no interpreter start-up).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import polars as pl

import convlab.store.store as store_module
from convlab.atomic import write_text_atomic
from convlab.embed import HashEmbedder
from convlab.index import VectorIndex
from convlab.store import Store, StoreConfig
from convlab.store import manifest as mf
from eval.bench_index import turn_lines

DIMENSION = 384


def _best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _replicate(frame: pl.DataFrame, copies: int, height: int) -> pl.DataFrame:
    """``copies`` copies of ``frame`` with conversation and unit ids made unique, cut to height."""
    parts = []
    for c in range(copies):
        part = frame.with_columns(pl.col("conversation_id") + f"-r{c}")
        if "unit_id" in part.columns:
            part = part.with_columns(pl.col("unit_id") + f"-r{c}")
        parts.append(part)
    return pl.concat(parts).head(height)


def _unit_vectors(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((n, DIMENSION), dtype=np.float32)
    for s in range(0, n, 100_000):
        block = rng.standard_normal((min(100_000, n - s), DIMENSION), dtype=np.float32)
        out[s : s + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.bench_verify", description=__doc__)
    p.add_argument("--out", type=Path, default=Path("runs/bench"))
    p.add_argument("--units", type=int, default=1_000_000)
    p.add_argument("--sessions", type=int, default=1000)
    p.add_argument("--turns", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--tmp", type=Path, default=None, help="where to build (default: system tmp)")
    args = p.parse_args(argv)
    rng = random.Random(0)
    config = StoreConfig(system="turn_pair")
    embedder = HashEmbedder(DIMENSION)
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        hist, store_dir = Path(tmp) / "history", Path(tmp) / "store"
        hist.mkdir()
        per = max(1, args.turns // args.sessions)
        for s in range(args.sessions):
            sid = f"s{s:04d}"
            lines = [x for t in range(per) for x in turn_lines(sid, t, rng)[0]]
            (hist / f"{sid}.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        store = Store(store_dir)
        t0 = time.perf_counter()
        store.update([hist], config=config, embedder=embedder, progress=False)
        small_build = time.perf_counter() - t0
        manifest = store.manifest()
        small = {n: store.frame(n) for n in mf.FRAMES}
        copies = -(-args.units // small["units"].height)
        frames = {
            n: _replicate(f, copies, args.units if n == "units" else f.height * copies)
            for n, f in small.items()
        }
        vectors = _unit_vectors(frames["units"].height)
        index = VectorIndex.build(
            frames["units"], vectors, model_id=embedder.model_id, spec=config.index
        )
        del vectors
        counts = {n: f.height for n, f in frames.items()}
        t0 = time.perf_counter()
        # the benchmark times the vectors' checks; no BM25 is written
        base = msgspec.structs.replace(manifest, counts=counts, bm25=False)
        store.write_version(base, frames, index, None)  # the writer's own path, hashes included
        write = time.perf_counter() - t0
        del index, frames
        version = Store(store_dir).version
        files = store.manifest().version_files
        total_bytes = sum(r.size for r in files.values())

        def opened() -> None:
            Store(store_dir).version  # noqa: B018 - opening is the work timed

        def unchanged(check: str) -> Callable[[], None]:
            def run() -> None:
                store_module.CHECK_ON_INDEX = check
                s = Store(store_dir).update([hist], config=config, embedder=embedder)
                if s.wrote_version or s.files_read:
                    raise RuntimeError("the benchmark's index run was not unchanged")

            return run

        results = {
            "units": int(base.counts["units"]),
            "counts": base.counts,
            "version_files": len(files),
            "version_bytes": total_bytes,
            "file_bytes": {k: r.size for k, r in files.items()},
            "transcript_files": args.sessions,
            "small_build_seconds": small_build,
            "write_seconds": write,
            "open_sizes_seconds": _best(opened, args.repeat),
            "verify_hash_seconds": _best(lambda: Store(store_dir).verify(), args.repeat),
            "index_load_seconds": _best(lambda: Store(store_dir).index(), args.repeat),
            "norm_check_seconds": _best(
                lambda: mf.check_norms(store_dir, version, rows=None), args.repeat
            ),
            "version": version.name,
        }
        default = store_module.CHECK_ON_INDEX
        for check in mf.CHECKS:
            results[f"index_unchanged_{check}_seconds"] = _best(unchanged(check), args.repeat)
        store_module.CHECK_ON_INDEX = default
        results["check_on_index_default"] = default
    results["hash_mb_per_second"] = results["version_bytes"] / 1e6 / results["verify_hash_seconds"]
    results["machine"] = {"platform": platform.platform(), "python": platform.python_version()}
    results["args"] = {k: str(v) for k, v in vars(args).items()}
    args.out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out / "bench_verify.json", json.dumps(results, indent=1))
    for k, v in results.items():
        if k not in ("file_bytes", "machine", "args", "counts"):
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
