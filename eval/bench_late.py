"""Benchmark late chunking: the default system against its late counterpart, cold, on LoCoMo.

``python -m eval.bench_late [--data PATH] [--out runs/bench] [--backend onnx-int8]
[--windows 256,512] [--conversations N]`` builds, in one run, every index of the default system
(``convlab/systems/default.toml``) and of its late counterparts (each dense view ``S`` searched
as ``late_S``, or ``late512_S`` for 512-token passes; the BM25 views unchanged), each from a
fresh, empty embedding cache, and writes ``bench_late.json``: per system the tokens run through
the model per token of message text (the chunks' tokens), the CPU-seconds spent inside the
model (and of the whole build), wall seconds, forward calls, and a warm rebuild's forward calls.
Targets (in the JSON): tokens per text token <= 1.5 for the late default (from 5.3), and >= 4x
fewer CPU-seconds of embedding than the default system. The data's path: ``--data``, else
``CONVLAB_DATA``, else the shared datasets folder.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from convlab.atomic import write_text_atomic
from convlab.build import build_indexes
from convlab.embed import CachedEmbedder, make_embedder
from convlab.embed.late import token_embedder
from convlab.evaluation.config import EvalConfig
from convlab.loaders import Corpus, load
from convlab.paths import locomo_path
from convlab.protocols import Embedder
from convlab.specs import UnitSpec
from convlab.strategies.late import LATE_WINDOWS
from convlab.systems import System, View, default_system

TARGET_TOKENS_PER_TEXT_TOKEN = 1.5
TARGET_CPU_RATIO = 4.0


class Counting:
    """An embedder that counts the tokens it runs and the CPU-seconds inside the model."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.name: str | None = getattr(inner, "name", None)
        self.tokens = 0
        self.cpu_s = 0.0
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """The inner embedder's vectors; counts the tokens the model reads (up to 256 each)."""
        from convlab.model import MAX_TOKENS, SPECIAL_TOKENS
        from convlab.pipeline.tokens import count_tokens

        self.tokens += sum(min(n + SPECIAL_TOKENS, MAX_TOKENS) for n in count_tokens(texts))
        self.calls += 1
        started = time.process_time()
        try:
            return self.inner.encode(texts)
        finally:
            self.cpu_s += time.process_time() - started

    def encode_tokens(self, texts: Sequence[str], max_tokens: int) -> list[np.ndarray]:
        """The inner embedder's token states; counts their rows."""
        self.calls += 1
        started = time.process_time()
        try:
            states = token_embedder(self.inner).encode_tokens(texts, max_tokens)
        finally:
            self.cpu_s += time.process_time() - started
        self.tokens += sum(len(s) for s in states)
        return states


def late_counterpart(system: System, prefix: str) -> System:
    """``system`` with each dense view's strategy ``S`` replaced by ``{prefix}_S``."""
    views = tuple(
        View(f"{prefix}_{v.strategy}") if v.retrieval.value == "dense" else v for v in system.views
    )
    return replace(system, name=f"{prefix}:{system.name}", views=views)


def measure(corpus: Corpus, system: System, inner: Embedder, cache: Path) -> dict[str, object]:
    """Build every index of ``system`` from an empty cache at ``cache``, then again warm."""
    dense = sorted({v.strategy for v in system.views if v.retrieval.value == "dense"})
    lexical = sorted({v.strategy for v in system.views if v.retrieval.value != "dense"})
    strategies = sorted({*dense, *lexical})
    policy = EvalConfig().policy
    specs = [UnitSpec(s, policy=policy) for s in strategies]
    counting = Counting(inner)
    cached = CachedEmbedder(counting, cache)
    wall, cpu = time.perf_counter(), time.process_time()
    built = build_indexes(corpus, specs, embedder=cached, dense=dense, lexical=lexical)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    text_tokens = int(next(iter(built.values())).chunks["n_tokens"].sum())
    warm = Counting(inner)
    build_indexes(corpus, specs, embedder=CachedEmbedder(warm, cache), dense=dense)
    return {
        "views": [v.name for v in system.views],
        "dense_strategies": dense,
        "units": {s: b.units.height for s, b in built.items()},
        "text_tokens": text_tokens,
        "tokens_embedded": counting.tokens,
        "tokens_per_text_token": counting.tokens / max(text_tokens, 1),
        "embed_cpu_s": counting.cpu_s,
        "build_cpu_s": cpu,
        "build_wall_s": wall,
        "forward_calls": counting.calls,
        "cache": _stats(cached),
        "warm_forward_calls": warm.calls,
    }


def _stats(cached: CachedEmbedder) -> dict[str, int]:
    s = cached.stats
    return {"requested": s.requested, "embedded": s.embedded, "model_calls": s.model_calls}


def main(argv: Sequence[str] | None = None) -> int:
    """Write ``bench_late.json``; 0 when the first late system meets both targets, else 1."""
    p = argparse.ArgumentParser(prog="python -m eval.bench_late", description=__doc__)
    p.add_argument("--data", default=None, help="LoCoMo's json (default: CONVLAB_DATA, shared)")
    p.add_argument("--out", type=Path, default=Path("runs/bench"))
    p.add_argument("--backend", default="onnx-int8")
    p.add_argument("--windows", default="256,512", help="late pass lengths: 256 and/or 512")
    p.add_argument("--conversations", type=int, default=0, help="the first N (0: all)")
    args = p.parse_args(argv)
    prefixes = {str(w): pre for pre, w in LATE_WINDOWS.items()}
    windows = [w.strip() for w in args.windows.split(",") if w.strip()]
    if not windows or any(w not in prefixes for w in windows):
        print(f"--windows: each of {', '.join(prefixes)}", file=sys.stderr)
        return 2
    path = locomo_path(args.data)
    corpus = load(path)
    if args.conversations:
        ids = corpus.conversations["conversation_id"].to_list()[: args.conversations]
        corpus = corpus.filter_conversations(ids)
    inner = make_embedder("minilm", args.backend)
    inner.encode(["load the model before the clock starts"])
    token_embedder(inner).encode_tokens(["and its token path"], 16)
    old = default_system()
    systems = [old] + [late_counterpart(old, prefixes[w]) for w in windows]
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, system in enumerate(systems):
            results[system.name] = measure(corpus, system, inner, Path(tmp) / f"cache-{i}")
            print(system.name, json.dumps(results[system.name]), flush=True)
    base, late = results[old.name], results[systems[1].name]
    ratio = float(base["embed_cpu_s"]) / max(float(late["embed_cpu_s"]), 1e-9)  # type: ignore[arg-type]
    per_token = float(late["tokens_per_text_token"])  # type: ignore[arg-type]
    out = {
        "data": str(path),
        "conversations": corpus.conversations.height,
        "backend": args.backend,
        "load": os.getloadavg(),
        "systems": results,
        "late_system": systems[1].name,
        "targets": {
            "tokens_per_text_token": {
                "target": f"<= {TARGET_TOKENS_PER_TEXT_TOKEN}",
                "value": per_token,
                "met": per_token <= TARGET_TOKENS_PER_TEXT_TOKEN,
            },
            "embed_cpu_ratio": {
                "target": f">= {TARGET_CPU_RATIO}",
                "value": ratio,
                "met": ratio >= TARGET_CPU_RATIO,
            },
        },
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out / "bench_late.json", json.dumps(out, indent=1))
    print(json.dumps(out["targets"], indent=1))
    met = per_token <= TARGET_TOKENS_PER_TEXT_TOKEN and ratio >= TARGET_CPU_RATIO
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
