"""Benchmark the torch backend per device on LoCoMo's unit texts, and check the GPU's vectors.

``python -m eval.bench_device --out DIR [--texts 2000] [--cpu-batch 64] [--gpu-batch 512]``
writes ``DIR/bench_device.json`` with:

- ``devices``: for each device at hand (``cpu`` always, ``cuda`` when torch sees a GPU, named by
  its card), texts/s of all-MiniLM-L6-v2 fp32 through :class:`convlab.embed.MiniLMEmbedder` on
  the same texts (sampled from LoCoMo's units of every strategy, as ``eval.bench_onnx`` samples
  them), after a warm-up, with the batch size used;
- ``cosine_cpu_vs_cuda``: each text's cosine between its CPU and its GPU vector (mean, minimum,
  percentiles) and ``match``: the minimum is at least :data:`MIN_COSINE`, the condition for the
  device being provenance only (one cache and one store for both). ``null`` without a GPU.

On a machine without a GPU it reports the CPU alone. The exit code is 1 when a GPU's vectors do
not match (the device would then have to be part of the cache key), 2 when LoCoMo is missing.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from convlab.embed import MiniLMEmbedder
from convlab.embed.device import torch_cuda_available
from eval.bench_onnx import cosine_summary, locomo_texts, write_json

MIN_COSINE = 0.999
"""The least cosine between a text's CPU and GPU vectors for the two to share a cache."""


def time_device(texts: list[str], device: str, batch_size: int) -> tuple[dict[str, Any], Any]:
    """Texts/s of the torch backend on ``device`` and the vectors it made (warmed up first)."""
    embedder = MiniLMEmbedder(device=device, batch_size=batch_size, show_progress=False)
    embedder.encode(["warm up the model", "and load it"])
    started = time.perf_counter()
    vectors = embedder.encode(texts)
    seconds = time.perf_counter() - started
    out: dict[str, Any] = {
        "texts": len(texts),
        "batch_size": batch_size,
        "seconds": seconds,
        "texts_per_second": len(texts) / seconds,
    }
    if device == "cuda":
        import torch

        out["card"] = torch.cuda.get_device_name()
    print(f"{device}: {out['texts_per_second']:.1f} texts/s", flush=True)
    return out, vectors


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when done (and a GPU's vectors match), 1 when they do not."""
    p = argparse.ArgumentParser(prog="python -m eval.bench_device", description=__doc__)
    p.add_argument("--out", type=Path, default=Path("runs/bench"))
    p.add_argument("--texts", type=int, default=2000, help="texts sampled from LoCoMo's units")
    p.add_argument("--cpu-batch", type=int, default=64, help="texts per batch on the CPU")
    p.add_argument("--gpu-batch", type=int, default=512, help="texts per batch on the GPU")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    try:
        texts = locomo_texts(args.texts, args.seed)
    except FileNotFoundError as exc:
        print(f"python -m eval.bench_device: {exc}", file=sys.stderr)
        return 2
    result: dict[str, Any] = {
        "command": " ".join(["python -m eval.bench_device", *(argv or sys.argv[1:])]),
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor()},
        "load_average_at_start": os.getloadavg(),
        "versions": {p: metadata.version(p) for p in ("torch", "sentence-transformers")},
        "min_cosine_required": MIN_COSINE,
    }
    devices = ["cpu", *(["cuda"] if torch_cuda_available() else [])]
    batches = {"cpu": args.cpu_batch, "cuda": args.gpu_batch}
    timings: dict[str, Any] = {}
    vectors: dict[str, Any] = {}
    for device in devices:
        timings[device], vectors[device] = time_device(texts, device, batches[device])
    result["devices"] = timings
    result["cosine_cpu_vs_cuda"] = None
    matched = True
    if "cuda" in vectors:
        summary = cosine_summary(np.asarray(vectors["cuda"]), np.asarray(vectors["cpu"]))
        matched = summary["min"] >= MIN_COSINE
        result["cosine_cpu_vs_cuda"] = {**summary, "match": matched}
        print(f"cosine cpu vs cuda: min {summary['min']:.6f}, match {matched}", flush=True)
    result["load_average_at_end"] = os.getloadavg()
    out = args.out / "bench_device.json"
    write_json(out, result)
    print(f"wrote {out}", flush=True)
    return 0 if matched else 1


if __name__ == "__main__":
    sys.exit(main())
