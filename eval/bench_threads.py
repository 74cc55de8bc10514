"""Benchmark ONNX Runtime's intra-op threads for the onnx and onnx-int8 backends, in one run.

``python -m eval.bench_threads --out DIR [--texts 2000] [--chunk 200] [--threads 1,2,0]``
writes ``DIR/bench_threads.json``: for each backend and each thread count (``0`` is
onnxruntime's own default, one thread per physical core), the texts/s and model tokens per
wall second and per CPU-second over the same LoCoMo texts (every strategy's units, sampled,
sorted by length), timed chunk by chunk with the settings alternating (the order rotates per
chunk) so load from other processes falls on all of them alike. ``fastest`` names, per
backend, the setting of the most tokens per wall second; ``OnnxEmbedder``'s default threads
follow it (:data:`convlab.embed.onnx.DEFAULT_THREADS`). The load average before and after is
recorded beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from convlab.atomic import write_text_atomic
from convlab.embed.onnx import OnnxEmbedder
from convlab.model import tokenizer
from eval.bench_onnx import locomo_texts

BACKENDS = {"onnx": False, "onnx-int8": True}


def _threads(text: str) -> list[int]:
    values = [int(v) for v in text.split(",") if v.strip()]
    if not values or any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"--threads {text!r}: counts >= 0, comma-separated")
    return values


def measure(texts: list[str], chunk: int, threads: list[int]) -> dict[str, Any]:
    """Texts/s and tokens per wall and CPU second of every (backend, threads) setting."""
    settings = [(b, t) for b in BACKENDS for t in threads]
    embedders = {
        (b, t): OnnxEmbedder(quantized=q, threads=t or None, export=True)
        for b, q in BACKENDS.items()
        for t in threads
    }
    for emb in embedders.values():
        emb.encode(["warm up the model", "and load it"])
    wall = dict.fromkeys(settings, 0.0)
    cpu = dict.fromkeys(settings, 0.0)
    for i, start in enumerate(range(0, len(texts), chunk)):
        batch = texts[start : start + chunk]
        k = i % len(settings)
        for s in settings[k:] + settings[:k]:
            w, c = time.perf_counter(), time.process_time()
            embedders[s].encode(batch)
            wall[s] += time.perf_counter() - w
            cpu[s] += time.process_time() - c
        print(f"chunk {i}: " + ", ".join(f"{b}/{t} {wall[(b, t)]:.1f}s" for b, t in settings))
    tokens = sum(len(e.ids) + 2 for e in tokenizer().encode_batch(texts))  # with [CLS], [SEP]
    rows = [
        {
            "backend": b,
            "threads": t if t else "default",
            "wall_seconds": round(wall[(b, t)], 2),
            "cpu_seconds": round(cpu[(b, t)], 2),
            "texts_per_second": round(len(texts) / wall[(b, t)], 1),
            "tokens_per_second": round(tokens / wall[(b, t)], 1),
            "tokens_per_cpu_second": round(tokens / cpu[(b, t)], 1),
        }
        for b, t in settings
    ]
    fastest = {
        b: max((r for r in rows if r["backend"] == b), key=lambda r: r["tokens_per_second"])[
            "threads"
        ]
        for b in BACKENDS
    }
    return {"texts": len(texts), "tokens": tokens, "rows": rows, "fastest": fastest}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.bench_threads", description=__doc__)
    p.add_argument("--out", type=Path, default=Path("runs/bench"))
    p.add_argument("--texts", type=int, default=2000)
    p.add_argument("--chunk", type=int, default=200, help="texts per alternating timing")
    p.add_argument("--threads", type=_threads, default=[1, 2, 0], help="0: onnxruntime's default")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    result: dict[str, Any] = {
        "command": " ".join(["python -m eval.bench_threads", *(argv or sys.argv[1:])]),
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor()},
        "load_average_at_start": os.getloadavg(),
        "versions": {"onnxruntime": metadata.version("onnxruntime")},
    }
    result.update(measure(locomo_texts(args.texts, args.seed), args.chunk, args.threads))
    result["load_average_at_end"] = os.getloadavg()
    out = args.out / "bench_threads.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, json.dumps(result, indent=1))
    print(json.dumps(result["rows"], indent=1))
    print(f"fastest: {result['fastest']}; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
