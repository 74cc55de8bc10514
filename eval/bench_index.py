"""Benchmark incremental indexing: first run, unchanged re-run, and a 1% append.

``python -m eval.bench_index --out DIR [--turns 10000]`` writes ``DIR/bench_index.json``.
Targets: the unchanged re-index takes at most 5% of the first run and embeds nothing; the 1%
append takes at most 5% of the first run plus the time to embed the new texts alone.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path

from convlab.atomic import write_text_atomic
from convlab.embed import MiniLMEmbedder
from convlab.store import Store, StoreConfig
from eval.bench_load import sentence

SESSIONS = 100


def turn_lines(sid: str, t: int, rng: random.Random) -> tuple[list[dict], list[str]]:
    ts = f"2026-02-{1 + t % 28:02d}T09:{t % 60:02d}:00.000Z"
    base = {"sessionId": sid, "timestamp": ts, "isSidechain": False}
    q, a = sentence(rng), sentence(rng)
    lines = [
        {**base, "type": "user", "uuid": f"{sid}-u{t}", "message": {"role": "user", "content": q}},
        {
            **base,
            "type": "assistant",
            "uuid": f"{sid}-a{t}",
            "message": {
                "id": f"m-{sid}-{t}",
                "role": "assistant",
                "content": [{"type": "text", "text": a}],
            },
        },
    ]
    return lines, [q, a]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.bench_index", description=__doc__)
    p.add_argument("--out", type=Path, default=Path("runs/bench"))
    p.add_argument("--turns", type=int, default=10_000)
    args = p.parse_args(argv)
    rng = random.Random(0)
    per = args.turns // SESSIONS
    config = StoreConfig(system="isolated")
    with tempfile.TemporaryDirectory() as tmp:
        hist, store_dir = Path(tmp) / "history", Path(tmp) / "store"
        hist.mkdir()
        for s in range(SESSIONS):
            sid = f"s{s:03d}"
            lines = [x for t in range(per) for x in turn_lines(sid, t, rng)[0]]
            (hist / f"{sid}.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        store = Store(store_dir)
        emb = MiniLMEmbedder(show_progress=False)
        emb.encode(["warm up"])
        first = store.update([hist], config=config, embedder=emb)
        again = store.update([hist], config=config, embedder=emb)
        new_texts: list[str] = []
        n_new = max(1, args.turns // 100)
        for i in range(n_new):
            sid = f"s{i % SESSIONS:03d}"
            lines, texts = turn_lines(sid, per + i, rng)
            new_texts += texts
            with (hist / f"{sid}.jsonl").open("a") as fh:
                fh.write("\n".join(json.dumps(x) for x in lines) + "\n")
        append = store.update([hist], config=config, embedder=emb)
        t = time.perf_counter()
        emb.encode(new_texts)  # the model is loaded and warm: embedding time alone
        new_only_s = time.perf_counter() - t
    result = {
        "turns": args.turns,
        "first": {
            "seconds": first.seconds,
            "texts_embedded": first.texts_embedded,
            "units": first.units,
        },
        "unchanged": {
            "seconds": again.seconds,
            "texts_embedded": again.texts_embedded,
            "wrote_version": again.wrote_version,
        },
        "append_1pct": {
            "seconds": append.seconds,
            "texts_embedded": append.texts_embedded,
            "new_turns": n_new,
            "embed_new_texts_alone_s": new_only_s,
        },
        "unchanged_over_first": again.seconds / first.seconds,
        "targets": {
            "unchanged<=0.05*first": again.seconds <= 0.05 * first.seconds,
            "unchanged_embeds_zero": again.texts_embedded == 0,
            "append<=0.05*first+embed_new": append.seconds <= 0.05 * first.seconds + new_only_s,
        },
        "cpus": os.cpu_count(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out / "bench_index.json", json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
