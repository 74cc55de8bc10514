"""The strategy comparison: ``python -m eval.run --data PATH --out DIR``.

Writes a run folder: ``config.json`` (every setting, model id, package versions, data
fingerprint), ``per_query.parquet``, ``budgets.parquet``, ``significance.parquet``,
``category_significance.parquet``, ``metrics.json``, ``qrels.txt`` and one TREC run per system
under ``runs/``, ``report.md`` and PNG plots. ``--data`` is the bundled sample folder (default),
LoCoMo (its json, or a folder holding ``locomo/locomo10.json``), a LoCoMo-family file or folder
of files, or a LongMemEval file (``longmemeval_s.json``: searched per question in its haystack,
scored at turn and session level with LongMemEval's measures), or a folder of pooled judgments
(``data/real_sessions``: ``judged@10`` and ``bpref`` join the headline).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import matplotlib
import polars as pl

matplotlib.use("Agg")

from convlab.embed import BACKENDS, CachedEmbedder, minilm_embedder
from convlab.evaluation import plots
from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.evaluate import (
    HEADLINE,
    JUDGED_METRICS,
    LONGMEMEVAL_METRICS,
    SCOPES,
    EvalConfig,
    Evaluation,
    default_systems,
    evaluate,
)
from convlab.evaluation.queries import write_qrels, write_run
from convlab.strategies import STRATEGIES
from eval.report import write_report

DEFAULT_STRATEGIES = "isolated,message,turn_pair,sequential,whole_turn,qa_pair"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m eval.run", description=__doc__)
    p.add_argument(
        "--data",
        default=None,
        help="data/sample (default), a LoCoMo-family json or folder, or a LongMemEval json",
    )
    p.add_argument("--conversations", default=None, help="comma-separated conversation ids")
    p.add_argument("--strategies", default=DEFAULT_STRATEGIES)
    p.add_argument("--budgets", default="128,256,512,1024,2048")
    p.add_argument(
        "--scope",
        default=None,
        choices=SCOPES,
        help="where queries search (default: haystack if the data has them, else conversation)",
    )
    p.add_argument("--baseline", default=None, help="system compared against (first strategy)")
    p.add_argument("--out", default="runs/eval")
    p.add_argument("--cache", default="runs/cache", help="embedding cache folder")
    p.add_argument(
        "--backend", default="torch", choices=BACKENDS, help="MiniLM backend (%(default)s)"
    )
    return p.parse_args(argv)


def save(ev: Evaluation, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(ev.config, indent=1, default=str))
    ev.per_query.write_parquet(out / "per_query.parquet")
    ev.budgets.write_parquet(out / "budgets.parquet")
    ev.significance.write_parquet(out / "significance.parquet")
    ev.category_significance.write_parquet(out / "category_significance.parquet")
    metrics = {
        "summary": ev.summary.to_dicts(),
        "by_category": ev.by_category.to_dicts(),
        "budgets": ev.budgets.group_by("system", "budget")
        .agg(
            *[
                pl.col(c).mean()
                for c in (
                    "coverage",
                    "evidence_token_recall",
                    "tokens_used",
                    "answer_contained",
                    "redundancy",
                )
            ]
        )
        .sort("system", "budget")
        .to_dicts(),
        "significance": ev.significance.to_dicts(),
        "category_significance": ev.category_significance.to_dicts(),
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1, default=str))
    runs = out / "runs"
    runs.mkdir(exist_ok=True)
    for name, hits in ev.hits.items():
        write_run(hits, runs / f"{name.replace(':', '_')}.trec", name.replace(":", "_"))
    figs = {
        "recall_at_k.png": plots.recall_at_k(ev.summary),
        "coverage_by_budget.png": plots.coverage_by_budget(ev.budgets),
        "recall_by_category.png": plots.recall_by_category(ev.by_category),
        "unit_lengths.png": plots.unit_lengths(ev.units),
    }
    for name, fig in figs.items():
        fig.savefig(out / name, dpi=110)
    return write_report(ev, out)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    strategies = [s for s in args.strategies.split(",") if s]
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        print(
            f"unknown strategies {unknown}; valid: {', '.join(sorted(STRATEGIES))}", file=sys.stderr
        )
        return 2
    data = load_labelled(args.data)
    convs = [c for c in (args.conversations or "").split(",") if c]
    data = data.select(convs or None)
    budgets = tuple(int(b) for b in args.budgets.split(","))
    scope = args.scope or ("haystack" if data.haystacks is not None else "conversation")
    metrics: tuple[str, ...] = EvalConfig().metrics
    headline: tuple[str, ...] = HEADLINE
    if data.sessions is not None:  # LongMemEval: its measures, at turn and session level
        metrics = tuple(dict.fromkeys((*metrics, *LONGMEMEVAL_METRICS)))
        headline = (*HEADLINE[:3], "success@5", "session:success@5", "session:ndcg@10")
    if data.judged is not None:  # pooled judgments: how much was judged, and bpref beside
        metrics = (*metrics, *JUDGED_METRICS)
        headline = (*headline, *JUDGED_METRICS)
    config = EvalConfig(
        budgets=budgets,
        scope=scope,
        baseline=args.baseline,
        metrics=metrics,
        headline=headline,
    )
    embedder = CachedEmbedder(minilm_embedder(args.backend), args.cache)
    ev = evaluate(data, default_systems(strategies), embedder=embedder, config=config)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_qrels(data.queries, out / "qrels.txt")
    report = save(ev, out)
    print(ev.table().to_pandas().to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"embedding: {embedder.stats}")
    print(f"report: {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
