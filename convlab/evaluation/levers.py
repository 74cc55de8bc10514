"""A lever against the same system without it: held-out delta, paired test, Holm.

Issue 23 measures each lever by its delta against the same system without the lever (not
against one baseline for every system): the pairs ``(lever, baseline)`` of one run's
``per_query.parquet`` are compared on one metric, each by the paired randomization test
(:func:`convlab.evaluation.significance.paired_randomization`), their p-values Holm-corrected
over the pairs of the run (:func:`convlab.evaluation.significance.holm`). Category means (the
LoCoMo categories a lever targets) come beside them.

Example:
    >>> pq = pl.DataFrame({"system": ["a", "a", "b", "b"], "query_id": ["1", "2", "1", "2"],
    ...     "category": ["x", "y", "x", "y"], "metric": ["recall@5"] * 4,
    ...     "value": [1.0, 0.0, 0.5, 0.0]})
    >>> lever_rows(pq, [("a", "b")], "recall@5")["delta"].to_list()
    [0.25]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from convlab.evaluation.significance import holm, paired_randomization

__all__ = ["lever_rows"]


def lever_rows(
    per_query: pl.DataFrame,
    pairs: Sequence[tuple[str, str]],
    metric: str,
    *,
    categories: Sequence[str] = (),
    seed: int = 0,
) -> pl.DataFrame:
    """One row per ``(lever, baseline)`` pair: means, delta, p, Holm p, category means.

    Args:
        per_query: ``system, query_id, category, metric, value`` (a run's per_query.parquet).
        pairs: ``(lever system, its baseline)``, each a system of the run.
        metric: the metric compared (``recall@5``).
        categories: categories whose means (lever and baseline) join each row.
        seed: the randomization test's seed.

    Raises:
        ValueError: a system the run does not have, or two systems judged on other queries.
    """
    scores = per_query.filter(pl.col("metric") == metric)
    systems = set(scores["system"].unique().to_list())
    rows = []
    for lever, base in pairs:
        missing = [s for s in (lever, base) if s not in systems]
        if missing:
            raise ValueError(f"no system {missing[0]!r} with {metric} in the run")
        a, b = (scores.filter(pl.col("system") == s).sort("query_id") for s in (lever, base))
        if a["query_id"].to_list() != b["query_id"].to_list():
            raise ValueError(f"{lever!r} and {base!r} were judged on different queries")
        va, vb = a["value"].to_numpy(), b["value"].to_numpy()
        row: dict[str, object] = {
            "lever": lever,
            "baseline": base,
            "queries": len(va),
            "baseline_mean": float(np.mean(vb)),
            "lever_mean": float(np.mean(va)),
            "delta": float(np.mean(va) - np.mean(vb)),
            "p": paired_randomization(va, vb, seed=seed),
        }
        for c in categories:
            mine = a["category"] == c
            row[f"{c}:baseline"] = float(vb[mine.to_numpy()].mean()) if mine.any() else None
            row[f"{c}:lever"] = float(va[mine.to_numpy()].mean()) if mine.any() else None
        rows.append(row)
    out = pl.DataFrame(rows)
    return out.with_columns(pl.Series("holm_p", holm(out["p"].to_list()))) if rows else out
