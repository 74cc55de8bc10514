"""The routing study's figures: paired tests by category, means, the classifier's accuracy, tables.

What :mod:`convlab.studies.routing_study` and :mod:`convlab.studies.policy_routing` report of
their routed systems: :func:`paired_tests` (each system against a reference, overall and within
each of :data:`CATEGORIES`, Holm-adjusted), :func:`means`, :func:`accuracy` and
:func:`markdown`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from convlab.evaluation.significance import holm, paired_randomization

__all__ = ["CATEGORIES", "accuracy", "markdown", "means", "paired_tests"]

CATEGORIES = ("multi-hop", "open-domain", "temporal")
"""The categories tested one by one (the weakest on LoCoMo, the ones routing targets)."""


def paired_tests(
    per_q: pl.DataFrame,
    categories: pl.DataFrame,
    against: str,
    systems: Sequence[str],
    *,
    metric: str = "recall@5",
) -> pl.DataFrame:
    """Each system against ``against``, overall and within each of :data:`CATEGORIES`.

    Paired randomization tests, Holm-adjusted over the systems overall and over (category x
    system) within categories. Returns ``subset, system, queries, against, against_mean, mean,
    delta, p, p_holm``.
    """
    wide = (
        per_q.filter(pl.col("metric") == metric)
        .pivot(on="system", index="query_id", values="value")
        .join(categories, on="query_id", how="left")
    )
    rows: list[dict[str, Any]] = []
    subsets = [("all", wide)] + [
        (c, wide.filter(pl.col("category") == c))
        for c in CATEGORIES
        if wide.filter(pl.col("category") == c).height
    ]
    for subset, part in subsets:
        base = part[against].to_numpy()
        for s in systems:
            x = part[s].to_numpy()
            rows.append(
                {
                    "subset": subset,
                    "system": s,
                    "queries": part.height,
                    "against": against,
                    "against_mean": float(base.mean()),
                    "mean": float(x.mean()),
                    "delta": float(x.mean() - base.mean()),
                    "p": paired_randomization(x, base),
                }
            )
    out = pl.DataFrame(rows)
    adjusted = []
    for overall in (True, False):
        part = out.filter((pl.col("subset") == "all") == overall)
        adjusted.append(part.with_columns(pl.Series("p_holm", holm(part["p"].to_list()))))
    return pl.concat(adjusted)


def accuracy(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, Any]:
    """The classifier's held-out accuracy, its recall per gold type and its confusion."""
    frame = pl.DataFrame({"gold": list(gold), "predicted": list(predicted)})
    hit = frame.with_columns((pl.col("gold") == pl.col("predicted")).alias("hit"))
    per = hit.group_by("gold").agg(pl.col("hit").mean().alias("recall"), pl.len().alias("n"))
    confusion = frame.group_by("gold", "predicted").len().sort("gold", "predicted")
    return {
        "accuracy": float(hit["hit"].mean()),  # type: ignore[arg-type]
        "per_type_recall": {r["gold"]: r["recall"] for r in per.iter_rows(named=True)},
        "confusion": confusion.to_dicts(),
    }


def means(per_q: pl.DataFrame, cats: pl.DataFrame, systems: Sequence[str]) -> list[Any]:
    """Each system's mean per metric, overall (``all``) and per category, in ``systems``' order."""
    joined = per_q.join(cats, on="query_id", how="left")
    overall = joined.group_by("system", "metric").agg(pl.col("value").mean().alias("mean"))
    by_cat = joined.group_by("system", "metric", "category").agg(
        pl.col("value").mean().alias("mean"), pl.len().alias("queries")
    )
    rows = overall.with_columns(pl.lit("all").alias("category")).join(
        joined.group_by("system", "metric").len("queries"), on=["system", "metric"]
    )
    both = pl.concat([rows.select(by_cat.columns), by_cat])
    order = {s: i for i, s in enumerate(systems)}
    return both.sort(
        pl.col("system").replace_strict(order, default=len(order)), "metric", "category"
    ).to_dicts()


def markdown(report: dict[str, Any], measure: str = "R@5") -> str:
    """The report's tests as a Markdown table (one row per subset, system and reference)."""
    head = f"| subset | system | vs | queries | {measure} vs | {measure} | delta | p | p (Holm) |"
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for r in report["comparisons"]:
        lines.append(
            f"| {r['subset']} | {r['system']} | {r['against']} | {r['queries']} | "
            f"{r['against_mean']:.3f} | {r['mean']:.3f} | {r['delta']:+.3f} | {r['p']:.4f} | "
            f"{r['p_holm']:.4f} |"
        )
    if "classifier_heldout" in report:
        lines.append("")
        accuracy = report["classifier_heldout"]["accuracy"]
        lines.append(f"classifier held-out accuracy: {accuracy:.3f}")
    return "\n".join(lines) + "\n"
