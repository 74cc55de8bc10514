"""A lever against the same system without it: held-out delta, paired test, Holm.

Issue 23 measures each lever by its delta against the same system without the lever (not
against one baseline for every system): the pairs ``(lever, baseline)`` of one run's
``per_query.parquet`` are compared on one metric, each by the paired randomization test
(:func:`convlab.evaluation.significance.paired_randomization`), their p-values Holm-corrected
over the pairs of the run (:func:`convlab.evaluation.significance.holm`). Category means (the
LoCoMo categories a lever targets) come beside them.

A lever's setting may also be chosen among several systems of the run by grouped
cross-validation (:func:`chosen_by_cv`, through :func:`convlab.evaluation.tune.cross_validate`):
each fold takes the system best on its training groups only, and each query gets the value of
its own fold's choice, a held-out value that pairs with the baseline's like any system's.

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
from convlab.systems.system import Tuning

__all__ = ["GROUPINGS", "chosen_by_cv", "lever_rows"]

GROUPINGS: tuple[str, ...] = ("conversation", "query")
"""How queries are grouped for cross-validation: by the conversation prefix of their id
(LoCoMo's ``conv-26:q0``), or each query alone (LongMemEval: by question; the real sessions)."""


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


def chosen_by_cv(
    per_query: pl.DataFrame,
    candidates: Sequence[str],
    metric: str,
    *,
    grouping: str = "conversation",
    folds: int = 10,
    name: str | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A system chosen among ``candidates`` per fold by grouped CV, as a system of its own.

    Args:
        per_query: a run's per-query values (``system, query_id, category, metric, value``).
        candidates: the systems to choose from (each fold takes the best on its training
            queries; ties: the first named).
        metric: the metric chosen on and returned.
        grouping: ``conversation`` or ``query`` (:data:`GROUPINGS`).
        folds: the folds (at most the number of groups).
        name: the chosen system's name (default ``cv(a|b|...)``).

    Returns:
        ``(per_query rows of the chosen system, the choice of each fold)``: the rows have the
        columns of ``per_query``, one per query every candidate was judged on, each the value
        of the system its own fold chose.

    Raises:
        ValueError: an unknown grouping, or a candidate the run does not have.
    """
    from convlab.evaluation.tune import conversation_groups, cross_validate

    if grouping not in GROUPINGS:
        raise ValueError(f"grouping {grouping!r} is not one of {', '.join(GROUPINGS)}")
    scores = per_query.filter(pl.col("metric") == metric)
    tables = []
    for system in candidates:
        mine = scores.filter(pl.col("system") == system).sort("query_id")
        if mine.height == 0:
            raise ValueError(f"no system {system!r} with {metric} in the run")
        tables.append(mine)
    ids = tables[0]["query_id"].to_list()
    if any(t["query_id"].to_list() != ids for t in tables):
        raise ValueError(f"the candidates {list(candidates)} were judged on different queries")
    groups = conversation_groups(ids) if grouping == "conversation" else list(ids)
    values = np.vstack([t["value"].to_numpy() for t in tables])
    config = Tuning(metric=metric, folds=min(folds, len(set(groups))))
    space = [{"system": c} for c in candidates]
    result = cross_validate(space, {metric: values}, ids, groups, config)
    held = result.per_query.sort("query_id")
    rows = tables[0].with_columns(
        pl.lit(name or f"cv({'|'.join(candidates)})").alias("system"),
        pl.Series("value", held["value"].to_numpy()),
    )
    choices = result.choices.with_columns(
        pl.col("setting").map_elements(lambda i: candidates[i], return_dtype=pl.String)
    )
    return rows.select(per_query.columns), choices
