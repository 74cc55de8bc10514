"""The fine-tuned views against the base model's, and a fusion with them, on held-out queries.

:func:`paired_family` tests named pairs of runs (``ft:sequential`` against ``sequential``, a fused
system against its baseline) on the same queries with the paired randomization test of
:mod:`convlab.evaluation.significance`, Holm-adjusted over the whole family, overall and per
category. :func:`fixed_fusion` fuses runs with weights fixed in advance (chosen elsewhere: no
label of the runs' queries moves them). :func:`compare_with_base` writes the comparison of
held-out ``ft:VIEW`` runs with a base run folder's runs.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from convlab.atomic import write_text_atomic
from convlab.evaluation.metrics import per_query
from convlab.evaluation.queries import read_qrels, write_run
from convlab.evaluation.run_files import read_runs
from convlab.evaluation.runfolder import run_path
from convlab.evaluation.significance import bootstrap_ci, holm, paired_randomization
from convlab.fusion import fuse

__all__ = ["fixed_fusion", "paired_family", "scored"]


def scored(
    runs: Mapping[str, pl.DataFrame], queries: pl.DataFrame, metrics: Sequence[str]
) -> pl.DataFrame:
    """``system, query_id, category, metric, value`` of each run on ``queries`` (0 if unranked)."""
    frames = []
    ids = queries.select("query_id", "category")
    for name, run in runs.items():
        pq = per_query(run.select("query_id", "doc_id", "rank"), queries, metrics)
        full = (
            ids.join(pl.DataFrame({"metric": pq["metric"].unique().sort()}), how="cross")
            .join(pq, on=["query_id", "metric"], how="left")
            .with_columns(pl.col("value").fill_null(0.0), pl.lit(name).alias("system"))
        )
        frames.append(full.select("system", "query_id", "category", "metric", "value"))
    return pl.concat(frames)


def paired_family(
    values: pl.DataFrame,
    pairs: Sequence[tuple[str, str]],
    metric: str,
    *,
    by_category: bool = True,
    seed: int = 0,
) -> pl.DataFrame:
    """Each ``(system, baseline)`` pair tested on ``metric``, Holm-adjusted over the family.

    The family is every pair (and, with ``by_category``, every pair within each category: one
    Holm family per category, as the evaluation's category tests).

    Returns:
        ``category`` ("all" or the category), ``system, baseline, queries, mean, baseline_mean,
        delta, ci_low, ci_high, p_randomization, p_holm``.
    """
    part = values.filter(pl.col("metric") == metric)
    groups: list[tuple[str, pl.DataFrame]] = [("all", part)]
    if by_category:
        groups += [
            (str(c), part.filter(pl.col("category") == c))
            for c in part["category"].drop_nulls().unique().sort().to_list()
        ]
    rows = []
    for category, frame in groups:
        wide = frame.pivot(on="system", index="query_id", values="value").fill_null(0.0)
        family: list[dict[str, Any]] = []
        for system, baseline in pairs:
            x, b = wide[system].to_numpy(), wide[baseline].to_numpy()
            d = x - b
            lo, hi = bootstrap_ci(d, seed=seed)
            family.append(
                {
                    "category": category,
                    "system": system,
                    "baseline": baseline,
                    "queries": int(x.size),
                    "mean": float(x.mean()),
                    "baseline_mean": float(b.mean()),
                    "delta": float(d.mean()),
                    "ci_low": lo,
                    "ci_high": hi,
                    "p_randomization": paired_randomization(x, b, seed=seed),
                }
            )
        for row, p in zip(family, holm([float(r["p_randomization"]) for r in family]), strict=True):
            row["p_holm"] = p
        rows += family
    return pl.DataFrame(rows)


def fixed_fusion(
    runs: Mapping[str, pl.DataFrame],
    weights: Mapping[str, float],
    *,
    method: str = "convex",
    norm: str = "z-score",
) -> pl.DataFrame:
    """The runs named in ``weights`` fused with those weights (``query_id, doc_id, rank, score``).

    Raises:
        ValueError: a run that ``runs`` does not have (naming those it has).
    """
    missing = [n for n in weights if n not in runs]
    if missing:
        raise ValueError(f"no run {', '.join(missing)}; the runs: {', '.join(sorted(runs))}")
    fused = fuse(
        [runs[n].select("query_id", "doc_id", "rank", "score") for n in weights],
        list(weights.values()),
        method=method,
        norm=norm,
    )
    return fused.select("query_id", "doc_id", "rank", "score")


FT_PREFIX = "ft:"
"""The fine-tuned views' run names: ``ft:`` and the base view's (``ft:sequential``)."""
BASE_FUSION = "fusion:convex"
METRICS = ("recall@5", "recall@10", "ndcg@10")


def compare_with_base(
    out: Path, base: Path, runs: Mapping[str, pl.DataFrame], weights: Mapping[str, float]
) -> tuple[list[str], pl.DataFrame, str]:
    """Base runs + ft runs + the fixed fusions, written under ``out``; the family tested.

    Returns:
        The systems written (``runs/*.trec``), the paired family (``comparison.parquet``) and
        its table (``comparison.md``).
    """
    base_runs = read_runs(base)
    queries_done = set(runs[next(iter(runs))]["query_id"].unique().to_list())
    qrels = read_qrels(base / "qrels.txt")
    ft_weights = {
        (f"{FT_PREFIX}{n}" if f"{FT_PREFIX}{n}" in runs else n): w for n, w in weights.items()
    }
    all_runs = {**base_runs, **runs}
    all_runs["fusion:convex-ft"] = fixed_fusion(all_runs, ft_weights)
    all_runs["fusion:convex-fixed"] = fixed_fusion(all_runs, weights)
    per_q = pl.read_parquet(base / "per_query.parquet").select("query_id", "category").unique()
    queries = (
        qrels.filter(pl.col("relevance") > 0)
        .group_by("query_id", maintain_order=True)
        .agg(pl.col("doc_id").alias("relevant"))
        .filter(pl.col("query_id").is_in(list(queries_done)))
        .join(per_q, on="query_id", how="left")
    )
    values = scored(all_runs, queries, METRICS)
    views = [n.removeprefix(FT_PREFIX) for n in runs]
    pairs = [(f"{FT_PREFIX}{v}", v) for v in views if v in base_runs]
    pairs += [("fusion:convex-ft", BASE_FUSION), ("fusion:convex-ft", "bm25:message")]
    family = pl.concat(
        [
            paired_family(values, pairs, m, by_category=m == "recall@5").with_columns(
                pl.lit(m).alias("metric")
            )
            for m in METRICS
        ]
    )
    (out / "runs").mkdir(parents=True, exist_ok=True)
    for name, run in all_runs.items():
        write_run(run.with_columns(pl.col("rank").cast(pl.Int32)), run_path(out, name), name)
    shutil.copyfile(base / "qrels.txt", out / "qrels.txt")
    values.write_parquet(out / "per_query.parquet")
    family.write_parquet(out / "comparison.parquet")
    md = [
        "| metric | category | system | baseline | n | baseline | system | delta | Holm p |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in family.iter_rows(named=True):
        md.append(
            f"| {r['metric']} | {r['category']} | {r['system']} | {r['baseline']} | "
            f"{r['queries']} | {r['baseline_mean']:.3f} | {r['mean']:.3f} | {r['delta']:+.3f} | "
            f"{r['p_holm']:.4f} |"
        )
    text = "\n".join(md) + "\n"
    write_text_atomic(out / "comparison.md", text)
    return list(all_runs), family, text
