"""Benchmark what ``search``'s sampled content check adds to opening a store's index.

``python -m eval.bench_search_open --out DIR [--units 100000]`` writes
``DIR/bench_search_open.json``.

A store of synthetic Claude Code sessions is built (HashEmbedder(384): vectors of
all-MiniLM-L6-v2's size), its frames replicated to ``--units`` units with random unit vectors and
written as a new version through the store's own writer (sizes, SHA-256 and block digests
recorded). Timed, files in the page cache, median of ``--repeat`` runs:

- ``sample_check``: :func:`convlab.store.manifest.check_sample` alone, as ``Store.index`` calls
  it on the index's files (each up to :data:`~convlab.store.manifest.WHOLE_BYTES` hashed whole, a
  larger one's first and last 1 MiB blocks and :data:`~convlab.store.manifest.SEARCH_BLOCKS`
  random ones);
- ``index_open`` / ``index_open_unchecked``: ``Store(dir).index()`` (pin, unit-length check,
  load) with the sampled check and with it replaced by a no-op;
- ``search_rows_checked`` / ``search_unguarded``: one query over the whole index (k=10) by a
  freshly opened index with its row guard (the hits' blocks hashed, their scores checked) and
  without it; ``rows_all_checked``: every row's block checked once (what the conversation-first
  step costs on its first search, which reads every vector).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from convlab.atomic import write_text_atomic
from convlab.embed import HashEmbedder
from convlab.index import VectorIndex
from convlab.store import Store, StoreConfig
from convlab.store import manifest as mf
from eval.bench_index import turn_lines
from eval.bench_verify import DIMENSION, _replicate, _unit_vectors


def _median(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _build(root: Path, units: int, sessions: int, turns: int) -> Path:
    """A store of ``units`` units under ``root``; returns its directory."""
    rng = random.Random(0)
    config = StoreConfig(system="turn_pair")
    embedder = HashEmbedder(DIMENSION)
    hist, store_dir = root / "history", root / "store"
    hist.mkdir()
    per = max(1, turns // sessions)
    for s in range(sessions):
        sid = f"s{s:04d}"
        lines = [x for t in range(per) for x in turn_lines(sid, t, rng)[0]]
        (hist / f"{sid}.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    store = Store(store_dir)
    store.update([hist], config=config, embedder=embedder, progress=False)
    manifest = store.manifest()
    small = {n: store.frame(n) for n in mf.FRAMES}
    copies = -(-units // small["units"].height)
    frames = {
        n: _replicate(f, copies, units if n == "units" else f.height * copies)
        for n, f in small.items()
    }
    index = VectorIndex.build(
        frames["units"],
        _unit_vectors(frames["units"].height),
        model_id=embedder.model_id,
        spec=config.index,
    )
    counts = {n: f.height for n, f in frames.items()}
    base = msgspec.structs.replace(manifest, counts=counts, bm25=False)
    store.write_version(base, frames, index, None)
    store.refresh()
    return store_dir


def _row_checks(store_dir: Path, repeat: int) -> dict[str, float]:
    """What the row guard adds to a search (see the module docstring)."""
    import numpy as np

    index = Store(store_dir).index()
    query = index.vectors(np.array([len(index) // 2]))
    guard = index.guard

    def searched(with_guard: bool) -> Callable[[], Any]:
        def run() -> None:
            fresh = Store(store_dir).index()  # opened anew each time, as a search process does
            if not with_guard:
                fresh.guard = None
            t0 = time.perf_counter()
            fresh.search(query, 10)
            timings.append(time.perf_counter() - t0)

        return run

    out = {}
    for name, flag in (("search_rows_checked", True), ("search_unguarded", False)):
        timings: list[float] = []
        for _ in range(repeat):
            searched(flag)()
        out[f"{name}_seconds"] = statistics.median(timings)
    index.guard = guard
    t0 = time.perf_counter()
    if guard is not None:
        guard.check(np.arange(len(index)))
    out["rows_all_checked_seconds"] = time.perf_counter() - t0
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.bench_search_open", description=__doc__)
    p.add_argument("--out", type=Path, default=Path("runs/bench"))
    p.add_argument("--units", type=int, default=100_000)
    p.add_argument("--sessions", type=int, default=200)
    p.add_argument("--turns", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=21)
    p.add_argument("--tmp", type=Path, default=None, help="where to build (default: system tmp)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        store_dir = _build(Path(tmp), args.units, args.sessions, args.turns)
        store = Store(store_dir)
        version, manifest = store.version, store.manifest()
        files = manifest.version_files
        rels = [f"index/{name}" for name in mf.INDEX_FILES if f"index/{name}" in files]

        def sample() -> None:
            mf.check_sample(store_dir, version, manifest, rels, blocks=mf.SEARCH_BLOCKS)

        def opened() -> None:
            Store(store_dir).index()

        checked = mf.check_sample
        opened()  # the page cache warm for every timing
        results: dict[str, Any] = {
            "units": manifest.counts["units"],
            "search_blocks": mf.SEARCH_BLOCKS,
            "index_file_bytes": {k: files[k].size for k in rels},
            "sample_check_seconds": _median(sample, args.repeat),
            "index_open_seconds": _median(opened, args.repeat),
        }
        mf.check_sample = lambda *_a, **_k: None
        try:
            results["index_open_unchecked_seconds"] = _median(opened, args.repeat)
        finally:
            mf.check_sample = checked
        results["index_open_added_seconds"] = (
            results["index_open_seconds"] - results["index_open_unchecked_seconds"]
        )
        results.update(_row_checks(store_dir, args.repeat))
    results["machine"] = {"platform": platform.platform(), "python": platform.python_version()}
    results["args"] = {k: str(v) for k, v in vars(args).items()}
    args.out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out / "bench_search_open.json", json.dumps(results, indent=1))
    for k, v in results.items():
        if k not in ("machine", "args"):
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
