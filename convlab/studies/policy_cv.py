"""The resurrection cell chosen by cross-validation, not on the test queries.

:func:`convlab.evaluation.policy_grid.efficiency_test` picks the best (system, policy) cell at
512 tokens on *all* queries and then tests it on those same queries, which favours it. Here the
cell is chosen by grouped k-fold cross-validation instead: the queries are
split into folds by group (:mod:`convlab.evaluation.folds`: a conversation, or the question
itself on LongMemEval), each fold chooses the
cell with the best mean coverage on its *training* groups, and each held-out query gets the values
of its own fold's choice. Ties go to the cell the grid names first. The held-out values, which
cover every query once, are then compared, paired over queries, with the reference cell
(``message`` + ``unit`` at 1,024 tokens, else the baseline with ``unit``) by
:func:`convlab.evaluation.significance.paired_randomization`.

Beside the free choice of a cell, each **policy family** is cross-validated alone: the cells of
one registered policy, whatever its parameters (``window``, ``window:n=2`` and ``window:n=3``
are the family ``window``; the ``adaptive`` thresholds likewise), so ``window``'s n and the
adaptive thresholds are chosen on the training folds exactly as a system is. Each family's
held-out coverage and answer containment are reported per budget, and its choice at the compared
budget is tested against the reference like the free choice; the p values of one grid's tests
(every family and the free choice, both measures) are Holm-adjusted together.

Input: a ``policy_budgets`` frame (``system, policy, query_id, budget, coverage,
answer_contained``, ...), as ``python -m eval.run --resurrection ...`` and
``python -m eval.resurrection_grid`` write it. ``python -m eval.policy_cv`` runs
:func:`policy_cv` on run folders.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from convlab.evaluation import folds as cv_folds
from convlab.evaluation.policy_grid import EFFICIENCY, reference_cell
from convlab.evaluation.significance import bootstrap_ci, holm, paired_randomization
from convlab.resurrection.policies import parse_spec

__all__ = ["BUDGETS", "cv_cells", "cv_per_query", "family_cv", "policy_cv"]

BUDGETS = (256, 512, 1024)
"""The budgets whose CV-chosen cell is reported."""

_MEASURES = ("coverage", "answer_contained")


def _matrices(
    at: pl.DataFrame, cells: list[tuple[str, str]], ids: list[str]
) -> dict[str, np.ndarray]:
    """Per measure, a (cells x queries) matrix; NaN where the measure is undefined.

    Raises:
        ValueError: a cell that lacks a query or holds one twice.
    """
    index = {q: i for i, q in enumerate(ids)}
    out = {m: np.full((len(cells), len(ids)), np.nan) for m in _MEASURES}
    for c, (system, policy) in enumerate(cells):
        part = at.filter((pl.col("system") == system) & (pl.col("policy") == policy))
        if part.height != len(ids) or part["query_id"].n_unique() != len(ids):
            raise ValueError(
                f"cell {system} + {policy} has {part.height} rows for {len(ids)} queries"
            )
        cols = [index[q] for q in part["query_id"]]
        for m in _MEASURES:
            out[m][c, cols] = part[m].cast(pl.Float64).fill_null(np.nan).to_numpy()
    return out


def cv_cells(
    policy_budgets: pl.DataFrame,
    budget: int,
    *,
    folds: int = cv_folds.FOLDS,
    qrels: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The cell chosen per fold at ``budget`` and each query's held-out values under it.

    Args:
        policy_budgets: the per-query grid.
        budget: the token budget.
        folds: the most folds (fewer when there are fewer groups).
        qrels: the run's qrels, to group queries by their relevant docs' conversation
            (:func:`convlab.evaluation.folds.groups`); None where each question has its own
            haystack (each query is then its own group unless its id names a conversation).

    Returns:
        ``held_out``: ``query_id, group, fold, system, policy, coverage, answer_contained``,
        each query once, in the grid's order, under its own fold's choice; ``choices``: one row
        per fold, ``fold, system, policy, train_coverage, test_queries, test_groups``.

    Raises:
        ValueError: no rows at ``budget``, fewer than two groups, or an incomplete cell.
    """
    at = policy_budgets.filter(pl.col("budget") == budget)
    if at.height == 0:
        raise ValueError(f"the grid has no rows at {budget} tokens")
    cells = at.select("system", "policy").unique(maintain_order=True).rows()
    ids = at["query_id"].unique(maintain_order=True).to_list()
    group = cv_folds.groups(ids, qrels)
    splits = cv_folds.splits(group, folds)
    values = _matrices(at, cells, ids)
    coverage = values["coverage"]
    fold_of = np.empty(len(ids), dtype=np.int64)
    chosen = np.empty(len(ids), dtype=np.int64)
    rows = []
    for fold, (train, test) in enumerate(splits):
        train_cov = coverage[:, train]
        defined = ~np.isnan(train_cov)
        if not defined.any():
            raise ValueError(f"fold {fold} has no training query with a coverage")
        sums = np.where(defined, train_cov, 0.0).sum(axis=1)
        means = np.where(defined.any(axis=1), sums / np.maximum(defined.sum(axis=1), 1), -np.inf)
        best = int(np.argmax(means))  # the first of equal maxima: the grid's order
        fold_of[test], chosen[test] = fold, best
        rows.append(
            {
                "fold": fold,
                "system": cells[best][0],
                "policy": cells[best][1],
                "train_coverage": float(means[best]),
                "test_queries": len(test),
                "test_groups": ",".join(sorted({group[i] for i in test})),
            }
        )
    cols = np.arange(len(ids))
    held_out = pl.DataFrame(
        {
            "query_id": ids,
            "group": group,
            "fold": fold_of,
            "system": [cells[c][0] for c in chosen],
            "policy": [cells[c][1] for c in chosen],
            **{m: values[m][chosen, cols] for m in _MEASURES},
        }
    ).with_columns(pl.col(m).fill_nan(None) for m in _MEASURES)
    return held_out, pl.DataFrame(rows)


def _mean(values: pl.Series) -> float | None:
    v = values.drop_nulls()
    return float(v.mean()) if v.len() else None  # type: ignore[arg-type]


def _paired(
    held_out: pl.DataFrame, reference: pl.DataFrame, measure: str, seed: int
) -> dict[str, Any]:
    """CV-chosen minus reference over the queries where both define ``measure``."""
    both = held_out.select("query_id", pl.col(measure).alias("a")).join(
        reference.select("query_id", pl.col(measure).alias("b")), on="query_id"
    )
    both = both.drop_nulls()
    if both.height == 0:
        return {"queries": 0, "cv": None, "reference": None, "delta": None, "p": None}
    a, b = both["a"].to_numpy(), both["b"].to_numpy()
    lo, hi = bootstrap_ci(a - b, seed=seed)
    return {
        "queries": both.height,
        "cv": float(a.mean()),
        "reference": float(b.mean()),
        "delta": float(a.mean() - b.mean()),
        "delta_ci": [lo, hi],
        "p": paired_randomization(a, b, seed=seed),
    }


def _summary(held_out: pl.DataFrame, choices: pl.DataFrame) -> dict[str, Any]:
    """Held-out means and what the folds chose."""
    counts = choices.group_by("system", "policy", maintain_order=True).len()
    return {
        "queries": held_out["coverage"].is_not_null().sum(),
        "groups": held_out["group"].n_unique(),
        "coverage": _mean(held_out["coverage"]),
        "answer_contained": _mean(held_out["answer_contained"]),
        "folds": choices.height,
        "chosen": {f"{s} + {p}": n for s, p, n in counts.iter_rows()},
        "choices": choices.to_dicts(),
    }


def family_cv(
    policy_budgets: pl.DataFrame,
    budgets: Sequence[int],
    *,
    folds: int = cv_folds.FOLDS,
    qrels: pl.DataFrame | None = None,
) -> dict[str, dict[int, tuple[pl.DataFrame, pl.DataFrame]]]:
    """Per policy family and budget, :func:`cv_cells` over that family's cells only.

    A family is a registered policy with all its parameter settings (:func:`parse_spec`'s name:
    ``window`` holds ``window``, ``window:n=2``, ...), so a fold chooses the system and the
    parameters on its training groups together.

    Returns:
        family -> budget -> (held_out, choices), families in the grid's order; a budget the
        family lacks is left out, and a family with none of ``budgets``.

    Example:
        Grid cells ``s + window`` and ``s + window:n=2`` make one family, ``window``.
    """
    specs = policy_budgets["policy"].unique(maintain_order=True).to_list()
    family_of = {p: parse_spec(p)[0] for p in specs}
    out: dict[str, dict[int, tuple[pl.DataFrame, pl.DataFrame]]] = {}
    for family in dict.fromkeys(family_of.values()):
        part = policy_budgets.filter(
            pl.col("policy").is_in([p for p in specs if family_of[p] == family])
        )
        have = set(part["budget"].unique().to_list())
        if not have & set(budgets):
            continue
        out[family] = {
            b: cv_cells(part, b, folds=folds, qrels=qrels) for b in sorted(set(budgets) & have)
        }
    return out


def _with_holm(comparisons: list[dict[str, Any]]) -> None:
    """Add ``p_holm`` to each comparison that has a p value (one family of tests)."""
    tested = [c for c in comparisons if c.get("p") is not None]
    for c, adjusted in zip(tested, holm([c["p"] for c in tested]), strict=True):
        c["p_holm"] = adjusted


def _reference(
    policy_budgets: pl.DataFrame, baseline: str | None, budget: int
) -> tuple[str, str, pl.DataFrame]:
    """The reference cell (``message`` + ``unit``, else the baseline's) and its rows at ``budget``.

    Raises:
        ValueError: the reference system is not in the grid.
    """
    systems = policy_budgets["system"].unique(maintain_order=True).to_list()
    ref_base = EFFICIENCY[1][0] if EFFICIENCY[1][0] in systems else (baseline or systems[0])
    system, policy = reference_cell(policy_budgets, ref_base)
    rows = policy_budgets.filter(
        (pl.col("system") == system) & (pl.col("policy") == policy) & (pl.col("budget") == budget)
    )
    return system, policy, rows


def cv_per_query(
    policy_budgets: pl.DataFrame,
    *,
    baseline: str | None,
    budget: int = EFFICIENCY[0],
    reference_budget: int = EFFICIENCY[2],
    folds: int = cv_folds.FOLDS,
    qrels: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The CV-chosen cell at ``budget`` and the reference cell, per query, as a run's values.

    ``system, query_id, metric, value`` rows (metrics ``coverage`` and ``answer_contained``) of
    two systems, ``policy CV@<budget>`` (each query under its own fold's cell, :func:`cv_cells`)
    and ``<reference system>+<policy>@<reference_budget>``, for the lever table
    (:mod:`convlab.studies.levers`).

    Raises:
        ValueError: as :func:`policy_cv`.
    """
    ref_system, ref_policy, ref = _reference(policy_budgets, baseline, reference_budget)
    held, _ = cv_cells(policy_budgets, budget, folds=folds, qrels=qrels)
    parts = [
        frame.select(
            pl.lit(name).alias("system"), "query_id", pl.col(m).cast(pl.Float64).alias("value")
        ).with_columns(pl.lit(m).alias("metric"))
        for name, frame in (
            (f"policy CV@{budget}", held),
            (f"{ref_system}+{ref_policy}@{reference_budget}", ref),
        )
        for m in _MEASURES
    ]
    out = pl.concat(parts).select("system", "query_id", "metric", "value")
    return out.filter(pl.col("value").is_not_null() & pl.col("value").is_not_nan())


def policy_cv(
    policy_budgets: pl.DataFrame,
    *,
    baseline: str | None,
    budgets: Sequence[int] = BUDGETS,
    budget: int = EFFICIENCY[0],
    reference_budget: int = EFFICIENCY[2],
    folds: int = cv_folds.FOLDS,
    qrels: pl.DataFrame | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """The CV-chosen cell at each budget, and CV at ``budget`` against the reference cell.

    Args:
        policy_budgets: the per-query grid.
        baseline: the run's baseline system: the reference is ``baseline`` + ``unit`` where the
            grid has no ``message`` system.
        budgets: the budgets reported (a budget the grid lacks is listed in ``missing``).
        budget: the CV-chosen cell compared with the reference.
        reference_budget: the reference cell's budget.
        folds: the most folds.
        qrels: as :func:`cv_cells` (None: a query id without a conversation is its own group).
        seed: seed of the randomization test and the bootstrap interval.

    Returns:
        ``budgets`` (per budget: ``queries``, ``groups``, held-out ``coverage`` and
        ``answer_contained``, ``folds``, ``choices`` per fold and ``chosen``: folds per cell),
        ``policies`` (per policy family, :func:`family_cv`: the same per budget, and its
        ``comparison`` with the reference),
        ``reference`` (its cell and means), ``comparison`` (per measure: the paired delta, its
        95% bootstrap interval, randomization p and ``p_holm``, Holm over every comparison of
        the grid: the free choice's and each family's, both measures), ``in_sample`` (the best
        cell at ``budget`` on all queries, as
        :func:`~convlab.evaluation.policy_grid.efficiency_test` picks it, a tie to the cell
        named first: it reads the test queries, so it is shown only beside the CV figure) and
        ``missing`` (budgets the grid lacks).

    Raises:
        ValueError: the reference system is not in the grid, or as :func:`cv_cells`.
    """
    ref_system, ref_policy, ref = _reference(policy_budgets, baseline, reference_budget)
    have = set(policy_budgets["budget"].unique().to_list())
    out: dict[str, Any] = {"budgets": {}, "missing": sorted({*budgets, budget} - have)}
    held: dict[int, pl.DataFrame] = {}
    for b in sorted({*budgets, budget} & have):
        held[b], choices = cv_cells(policy_budgets, b, folds=folds, qrels=qrels)
        out["budgets"][str(b)] = _summary(held[b], choices)
    out["reference"] = {
        "system": ref_system,
        "policy": ref_policy,
        "budget": reference_budget,
        "message_in_grid": ref_system == EFFICIENCY[1][0],
        "queries": ref["coverage"].is_not_null().sum(),
        "coverage": _mean(ref["coverage"]),
        "answer_contained": _mean(ref["answer_contained"]),
    }
    out["comparison"] = {
        "budget": budget,
        **(
            {m: _paired(held[budget], ref, m, seed) for m in _MEASURES}
            if budget in held and ref.height
            else {}
        ),
    }
    out["policies"] = {}
    tests = [out["comparison"][m] for m in _MEASURES if m in out["comparison"]]
    for family, by_budget in family_cv(
        policy_budgets, sorted({*budgets, budget}), folds=folds, qrels=qrels
    ).items():
        row: dict[str, Any] = {
            "budgets": {str(b): _summary(*pair) for b, pair in by_budget.items()},
            "comparison": {"budget": budget},
        }
        if budget in by_budget and ref.height:
            for m in _MEASURES:
                row["comparison"][m] = _paired(by_budget[budget][0], ref, m, seed)
                tests.append(row["comparison"][m])
        out["policies"][family] = row
    _with_holm(tests)
    at = (
        policy_budgets.filter(pl.col("budget") == budget)
        .group_by("system", "policy", maintain_order=True)
        .agg(pl.col("coverage").mean())
    )
    if at.height and not at["coverage"].is_null().all():
        best = at.sort("coverage", descending=True, nulls_last=True, maintain_order=True).row(
            0, named=True
        )
        out["in_sample"] = {k: best[k] for k in ("system", "policy", "coverage")}
    return out
