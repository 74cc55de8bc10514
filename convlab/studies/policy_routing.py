"""The resurrection cell (system + policy) chosen per question type, by grouped CV.

:mod:`convlab.studies.policy_cv` chooses one (system, policy) cell of the resurrection grid
per fold, on the coverage of its training queries. Here the cell is routed per question type
(:func:`convlab.studies.routing.route_cv`: the same fold logic and threshold as the fusion
weights' routing), a held-out query taking the cell of its gold type, or of the type a
classifier fitted on the fold's training queries predicts. Each is tested, paired over queries,
against the one-cell CV choice (the all-type route: :mod:`~convlab.studies.policy_cv`'s
choice) with the paired randomization test, Holm-adjusted as
:func:`convlab.studies.routing_report.paired_tests` does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from convlab.defaults import BUDGET
from convlab.studies.routing import Routing, predicted_types, route_cv
from convlab.studies.routing_report import paired_tests

__all__ = ["cell_matrix", "policy_routing"]


def cell_matrix(
    policy_budgets: pl.DataFrame, budget: int, ids: list[str], measure: str
) -> tuple[list[tuple[str, str]], np.ndarray]:
    """The grid's cells at ``budget`` and their (cells x ``ids``) values of ``measure``.

    Raises:
        ValueError: no rows at ``budget``, or a cell without a value for one of ``ids``.
    """
    at = policy_budgets.filter(pl.col("budget") == budget)
    if at.height == 0:
        raise ValueError(f"the grid has no rows at {budget} tokens")
    cells = at.select("system", "policy").unique(maintain_order=True).rows()
    out = np.empty((len(cells), len(ids)))
    order = pl.DataFrame({"query_id": ids})
    for c, (system, policy) in enumerate(cells):
        part = at.filter((pl.col("system") == system) & (pl.col("policy") == policy))
        got = order.join(part.select("query_id", measure), on="query_id", how="left")
        if got[measure].null_count():
            raise ValueError(f"cell {system} + {policy} lacks {measure} for some queries")
        out[c] = got[measure].cast(pl.Float64).to_numpy()
    return [(str(s), str(p)) for s, p in cells], out


def policy_routing(
    policy_budgets: pl.DataFrame, queries: pl.DataFrame, config: Routing, *, budget: int = BUDGET
) -> dict[str, Any]:
    """The cell routed per type at ``budget``, against the one-cell CV choice.

    Args:
        policy_budgets: the per-query grid (``eval.run --resurrection ...``).
        queries: ``query_id, text, category, group``: the queries, their gold type and CV group;
            only those with a coverage in every cell are scored.
        config: the folds, the threshold and the classifier.
        budget: the token budget.
    """
    at = policy_budgets.filter(pl.col("budget") == budget)
    defined = at.group_by("query_id").agg(pl.col("coverage").is_not_null().all().alias("ok"))
    scored = queries.join(defined.filter("ok"), on="query_id", how="semi", maintain_order="left")
    ids = scored["query_id"].to_list()
    cells, coverage = cell_matrix(policy_budgets, budget, ids, "coverage")
    _, contained = cell_matrix(policy_budgets, budget, ids, "answer_contained")
    groups, gold = scored["group"].to_list(), scored["category"].to_list()
    predict = predicted_types(scored["text"].to_list(), gold, config.classifier)
    routed = {
        "cv one cell": route_cv(coverage, groups, ["*"] * len(ids), config),
        "routed:gold": route_cv(coverage, groups, gold, config),
        "routed:predicted": route_cv(coverage, groups, gold, config, test_types=predict),
    }
    frames = []
    cols = np.arange(len(ids))
    for name, r in routed.items():
        for measure, matrix in (("coverage", coverage), ("answer_contained", contained)):
            frames.append(
                pl.DataFrame(
                    {
                        "system": name,
                        "query_id": ids,
                        "metric": measure,
                        "value": matrix[r.settings, cols],
                    }
                )
            )
    per_q = pl.concat(frames)
    cats = scored.select("query_id", "category")
    mine = ["routed:gold", "routed:predicted"]
    tests = pl.concat(
        [paired_tests(per_q, cats, "cv one cell", mine, metric=m) for m in ("coverage",)]
    )
    means = (
        per_q.group_by("system", "metric", maintain_order=True)
        .agg(pl.col("value").mean().alias("mean"))
        .to_dicts()
    )
    choices = pl.concat(
        [r.choices.with_columns(pl.lit(n).alias("route")) for n, r in routed.items()]
    ).with_columns(
        pl.col("setting")
        .map_elements(lambda s: " + ".join(cells[s]), return_dtype=pl.String)
        .alias("cell")
    )
    return {
        "budget": budget,
        "queries": len(ids),
        "cells": len(cells),
        "means": means,
        "comparisons": tests.to_dicts(),
        "choices": choices.select("route", "fold", "type", "cell", "train_queries", "fallback")
        .filter(pl.col("route") != "routed:predicted")
        .to_dicts(),
    }
