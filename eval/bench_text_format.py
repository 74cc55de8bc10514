"""Benchmark the dialog text formats: is ``(date) Speaker said, "..."`` worth embedding?

``python -m eval.bench_text_format --cache DIR [--out runs/bench/text_format.json]`` evaluates
the dense ``message`` and ``sequential`` systems and ``bm25:message`` on LoCoMo (all
conversations, conversation scope, MiniLM torch) once per text format
(:data:`convlab.pipeline.policy.TEXT_FORMATS`), and compares each format with ``speaker``
(today's default) by paired randomization with Holm's correction over the formats
(:func:`convlab.evaluation.significance.compare`). Each format's per-query frame is written
beside the JSON (``<out without .json>/<format>.parquet``) as soon as it is done, and the JSON is
rewritten after every format, so a stopped run keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import polars as pl

from convlab.atomic import write_file_atomic, write_text_atomic
from convlab.embed import CachedEmbedder, minilm_embedder
from convlab.evaluation.compare import comparison_config
from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.evaluate import evaluate
from convlab.evaluation.significance import compare
from convlab.paths import locomo_path
from convlab.pipeline.policy import TEXT_FORMATS, ContentPolicy
from convlab.retrieval.options import Retrieval
from convlab.systems.system import System

BASELINE = "speaker"
METRICS = ("recall@5", "ndcg@10", "coverage@512")
SYSTEMS = [
    System(name="message", strategy="message"),
    System(name="sequential", strategy="sequential"),
    System(name="bm25:message", strategy="message", retrieval=Retrieval.LEXICAL),
]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.bench_text_format", description=__doc__)
    p.add_argument("--data", type=Path, default=None, help="locomo10.json (default: found)")
    p.add_argument("--cache", type=Path, required=True, help="embedding cache folder")
    p.add_argument("--out", type=Path, default=Path("runs/bench/text_format.json"))
    p.add_argument(
        "--formats",
        default=",".join([BASELINE, *(f for f in TEXT_FORMATS.names() if f != BASELINE)]),
        help="text formats, the baseline first (%(default)s)",
    )
    p.add_argument("--conversations", default="", help="comma-separated ids (default: all)")
    p.add_argument(
        "--systems",
        default=",".join(s.name for s in SYSTEMS),
        help="a subset of the systems (%(default)s)",
    )
    args = p.parse_args(argv)
    by_name = {s.name: s for s in SYSTEMS}
    unknown = [n for n in args.systems.split(",") if n not in by_name]
    if unknown:
        p.error(f"unknown systems {unknown}; valid: {', '.join(by_name)}")
    systems = [by_name[n] for n in args.systems.split(",")]
    formats = [f for f in args.formats.split(",") if f]
    for f in formats:
        TEXT_FORMATS.get(f)  # an unknown name: the error lists the valid ones
    if formats[0] != BASELINE:
        p.error(f"the first format must be the baseline {BASELINE!r}")
    data = load_labelled(args.data or locomo_path())
    data = data.select([c for c in args.conversations.split(",") if c] or None)
    base = comparison_config(data, budgets=(512,), scope="conversation", baseline=None)
    embedder = CachedEmbedder(minilm_embedder("torch"), args.cache)
    frames_dir = args.out.with_suffix("")
    frames_dir.mkdir(parents=True, exist_ok=True)
    result: dict[str, object] = {
        "data": str(args.data or locomo_path()),
        "queries": data.queries.height,
        "systems": [s.name for s in systems],
        "metrics": list(METRICS),
        "baseline": BASELINE,
        "formats": {},
    }
    per_query: dict[str, pl.DataFrame] = {}
    for name in formats:
        config = replace(base, policy=ContentPolicy(text_format=name))
        before = embedder.stats.embedded
        started = time.perf_counter()
        ev = evaluate(data, systems, embedder=embedder, config=config, progress=False)
        pq = ev.per_query.filter(pl.col("metric").is_in(METRICS))
        per_query[name] = pq
        write_file_atomic(frames_dir / f"{name}.parquet", pq.write_parquet)
        result["formats"][name] = {  # type: ignore[index]
            "config": {"policy": config.policy.as_dict()},
            "seconds": round(time.perf_counter() - started, 1),
            "texts_embedded": embedder.stats.embedded - before,
            "means": _means(pq),
        }
        result["significance"] = _significance(per_query, [s.name for s in systems])
        write_text_atomic(args.out, json.dumps(result, indent=1) + "\n")
        print(f"{name}: {result['formats'][name]}", flush=True)  # type: ignore[index]
    print(f"wrote {args.out}")
    return 0


def _means(pq: pl.DataFrame) -> dict[str, dict[str, float]]:
    """``{system: {metric: mean over queries}}``."""
    out: dict[str, dict[str, float]] = {}
    for (system, metric), part in pq.group_by("system", "metric", maintain_order=True):
        out.setdefault(str(system), {})[str(metric)] = float(part["value"].mean())  # type: ignore[arg-type]
    return out


def _significance(
    per_query: dict[str, pl.DataFrame], systems: list[str]
) -> list[dict[str, object]]:
    """Each format against the baseline, per system: one :func:`compare` per system."""
    if BASELINE not in per_query or len(per_query) < 2:
        return []
    rows: list[dict[str, object]] = []
    for system in systems:
        frame = pl.concat(
            [
                pq.filter(pl.col("system") == system)
                .select("query_id", "metric", "value")
                .with_columns(pl.lit(name).alias("system"))
                for name, pq in per_query.items()
            ]
        )
        sig = compare(frame.select("system", "query_id", "metric", "value"), BASELINE)
        for row in sig.filter(pl.col("system") != BASELINE).iter_rows(named=True):
            rows.append({"system": system, "format": row.pop("system"), **row})
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
