"""Build a large store for ``eval.bench_search --store``: LoCoMo copied until it holds N units.

``python -m eval.bench_store --out DIR [--copies 7] [--backend onnx-int8]`` writes
``DIR/sources/locomo-cI.json`` (LoCoMo's 10 conversations, each sample id suffixed ``-cI``, so
every copy is a conversation of its own) and runs ``convlab index DIR/sources --store
DIR/store`` with the default system and the real model. The copies share their texts, so the
embedding cache embeds each distinct text once: one copy's worth of model time for N copies of
units. ``DIR/bench_store.json`` records the command, the units per strategy and the time.

Seven copies hold 280,700 units of the default system (message 41,174; sequential and
turn_pair 119,763 each); indexing them took 55 min on 2 shared cores at load 15-27.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from convlab.atomic import write_text_atomic
from convlab.paths import locomo_path


def write_copies(sources: Path, copies: int, data: Path | None = None) -> list[Path]:
    """LoCoMo's samples written ``copies`` times, sample ids suffixed ``-c0``, ``-c1``, ..."""
    samples = json.loads(locomo_path(data).read_text())
    sources.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(copies):
        copy = [{**s, "sample_id": f"{s['sample_id']}-c{i}"} for s in samples]
        path = sources / f"locomo-c{i}.json"
        write_text_atomic(path, json.dumps(copy))
        out.append(path)
    return out


def units_held(store: Path) -> dict[str, int]:
    """Units per strategy of the store's live version."""
    from convlab.store import Store

    units = Store(store).frame("units")
    return dict(sorted(units.group_by("strategy").len().iter_rows()))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.bench_store", description=__doc__)
    p.add_argument("--out", type=Path, default=Path("runs/bench_store"))
    p.add_argument("--copies", type=int, default=7, help="copies of LoCoMo (%(default)s)")
    p.add_argument("--data", type=Path, default=None, help="locomo10.json (default: shared)")
    p.add_argument("--backend", default="onnx-int8", help="the model's backend (%(default)s)")
    p.add_argument("--embedder", default="minilm", help="minilm, or hash for a quick test")
    args = p.parse_args(argv)
    if args.copies < 1:
        p.error("--copies must be at least 1")
    sources = args.out / "sources"
    write_copies(sources, args.copies, args.data)
    cmd = [sys.executable, "-m", "convlab", "index", str(sources), "--store"]
    cmd += [str(args.out / "store"), "--backend", args.backend, "-q"]
    cmd += ["--embedder", args.embedder] if args.embedder != "minilm" else []
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    units = units_held(args.out / "store")
    record = {
        "command": " ".join(["python -m eval.bench_store", *(argv or sys.argv[1:])]),
        "index_command": " ".join(cmd[2:]),
        "copies": args.copies,
        "units": units,
        "units_total": sum(units.values()),
        "index_s": round(time.perf_counter() - t, 1),
    }
    write_text_atomic(args.out / "bench_store.json", json.dumps(record, indent=1))
    print(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
