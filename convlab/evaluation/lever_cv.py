"""A lever's held-out delta: its setting chosen by grouped CV, tested against the same system.

A *lever* is an option added to a system (a time boost, a second round, ...). An evaluation
run holds the system without it (``base``) and the system with each setting of the lever
(``settings``: one name when the setting was fixed in advance). :func:`lever_cv` chooses the
setting per fold by grouped k-fold cross-validation (:func:`convlab.evaluation.tune.
cross_validate`: the choice of a fold reads its training queries only; groups are
conversations, or questions on LongMemEval: :func:`convlab.evaluation.policy_cv.
policy_groups`), so each query's value is that of its own fold's choice, and compares those
held-out values with the base system's, paired over queries
(:func:`~convlab.evaluation.significance.paired_randomization`, a bootstrap interval of the
delta). :func:`holm_rows` adjusts the p values of several levers tested together (Holm).

Input: a run folder's ``per_query.parquet`` (``system, query_id, category, metric, value``).

Example:
    >>> pq = pl.DataFrame({"system": ["b", "b", "l", "l"], "query_id": ["a:q0", "b:q0"] * 2,
    ...     "category": ["x", "x", "x", "x"], "metric": ["recall@5"] * 4,
    ...     "value": [0.0, 1.0, 1.0, 1.0]})
    >>> row, _ = lever_cv(pq, "b", ["l"], folds=2)
    >>> row["base"], row["with_lever"], row["delta"]
    (0.5, 1.0, 0.5)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from convlab.evaluation.policy_cv import policy_groups
from convlab.evaluation.significance import bootstrap_ci, holm, paired_randomization
from convlab.evaluation.tune import TuneResult, cross_validate
from convlab.systems.system import Tuning

__all__ = ["holm_rows", "lever_cv", "metric_matrix"]


def metric_matrix(
    per_query: pl.DataFrame, systems: Sequence[str], metric: str, ids: Sequence[str]
) -> np.ndarray:
    """A (systems x queries) matrix of ``metric``, queries in the order of ``ids``.

    Raises:
        ValueError: a system that lacks one of the queries.
    """
    out = np.empty((len(systems), len(ids)))
    for i, name in enumerate(systems):
        part = per_query.filter((pl.col("system") == name) & (pl.col("metric") == metric))
        got = dict(zip(part["query_id"].to_list(), part["value"].to_list(), strict=True))
        missing = [q for q in ids if got.get(q) is None]
        if missing:
            raise ValueError(f"system {name!r} has no {metric} for {len(missing)} queries")
        out[i] = [got[q] for q in ids]
    return out


def lever_cv(
    per_query: pl.DataFrame,
    base: str,
    settings: Sequence[str],
    *,
    metric: str = "recall@5",
    folds: int = Tuning().folds,
    qrels: pl.DataFrame | None = None,
    subset: Sequence[str] | None = None,
    seed: int = 0,
) -> tuple[dict[str, Any], TuneResult]:
    """The lever's setting chosen per fold, and its held-out values against ``base``'s.

    Args:
        per_query: a run's per-query values.
        base: the system without the lever.
        settings: the systems with the lever, one per setting (the grid's order breaks ties).
        metric: what the choice maximises and the test compares.
        folds: the most folds (fewer when there are fewer groups).
        qrels: the run's qrels, to group queries by their relevant docs' conversation; None
            where each question is its own group (LongMemEval).
        subset: report the comparison on these queries only (the choice still reads every
            training query of its fold).
        seed: seed of the test and the interval.

    Returns:
        One row (``base, with_lever, delta, ci_low, ci_high, p, queries, chosen``: the settings
        chosen, with how many folds chose each) and the :class:`TuneResult` of the choice.

    Raises:
        ValueError: no settings, a system without the metric for a query, fewer than 2 groups.
    """
    if not settings:
        raise ValueError("a lever needs at least one setting")
    rows = per_query.filter((pl.col("system") == base) & (pl.col("metric") == metric))
    rows = rows.filter(pl.col("value").is_not_null() & pl.col("value").is_not_nan())
    ids = rows["query_id"].to_list()
    group = policy_groups(ids, qrels)
    n_folds = min(folds, len(set(group)))
    if n_folds < 2:
        raise ValueError(f"{len(set(group))} query groups cannot make 2 folds")
    values = metric_matrix(per_query, settings, metric, ids)
    space = [{"system": s} for s in settings]
    config = Tuning(metric=metric, folds=n_folds)
    result = cross_validate(space, {config.metric: values}, ids, group, config)
    held = result.per_query.filter(pl.col("metric") == config.metric)["value"].to_numpy()
    before = rows["value"].to_numpy()
    keep = np.ones(len(ids), dtype=bool) if subset is None else np.isin(ids, list(subset))
    a, b = held[keep], before[keep]
    chosen = result.choices.group_by("params").len().sort("len", descending=True)
    row: dict[str, Any] = {
        "base_system": base,
        "queries": int(keep.sum()),
        "base": float(b.mean()) if b.size else None,
        "with_lever": float(a.mean()) if a.size else None,
        "delta": float((a - b).mean()) if a.size else None,
        "p": paired_randomization(a, b, seed=seed) if a.size else None,
        "chosen": "; ".join(f"{p} x{n}" for p, n in chosen.iter_rows()),
    }
    row["ci_low"], row["ci_high"] = bootstrap_ci(a - b, seed=seed) if a.size else (None, None)
    return row, result


def holm_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with ``p_holm``: Holm's adjustment over every row that has a p value."""
    tested = [i for i, r in enumerate(rows) if r.get("p") is not None]
    adjusted = holm([rows[i]["p"] for i in tested])
    out = [dict(r, p_holm=None) for r in rows]
    for i, p in zip(tested, adjusted, strict=True):
        out[i]["p_holm"] = p
    return out
