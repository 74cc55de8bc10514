"""The system x policy resurrection grid: means, significance and the efficiency question.

Input: a ``policy_budgets`` frame (``system, policy, query_id, budget`` and the measures of
:func:`convlab.resurrection.budget_measures`), as :attr:`Evaluation.policy_budgets` holds it
(``python -m eval.run --resurrection unit,doc,...``) and ``python -m eval.resurrection_grid``
builds it from a saved run. Both go through the functions here, so the grid's figures, tests and
choices are made in one place.

- :func:`grid_means`: means over queries per (system, policy, budget), each measure over the
  queries where it is defined (coverage needs relevant docs, containment an answer).
- :func:`grid_significance`: every cell against the **reference cell** (the baseline system with
  the ``unit`` policy, at the same budget) on coverage and answer containment, by
  :func:`convlab.evaluation.significance.compare` (paired randomization test, Wilcoxon, bootstrap
  interval of the mean); the randomization p-values are then Holm-corrected over the whole grid
  of one measure (every budget and cell but the reference ones), not per budget. Beside it, the
  **efficiency** test: the best cell at 512 tokens (by mean coverage) against
  ``message`` + ``unit`` at 1024 tokens, paired over queries (one pre-stated comparison, not
  corrected; the best cell is chosen on the same queries, which favours it).
- :func:`plot_systems`: which systems the grid's plot draws by default.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from convlab.defaults import BUDGET, REFERENCE_BUDGET, REFERENCE_CELL
from convlab.evaluation.significance import bootstrap_ci, compare, holm

__all__ = [
    "EFFICIENCY",
    "MEASURES",
    "TESTED",
    "efficiency_test",
    "grid_means",
    "grid_significance",
    "plot_systems",
    "reference_cell",
]

MEASURES = ("coverage", "evidence_token_recall", "answer_contained", "tokens_used", "redundancy")
"""The grid's measures, averaged per (system, policy, budget)."""

TESTED = ("coverage", "answer_contained")
"""The measures tested against the reference cell."""

EFFICIENCY = (BUDGET, REFERENCE_CELL, REFERENCE_BUDGET)
"""The efficiency question: does the best cell at 512 tokens cover as much as message + unit at
1024?"""

_SCHEMA = {
    "test": pl.String,
    "metric": pl.String,
    "system": pl.String,
    "policy": pl.String,
    "budget": pl.Int32,
    "reference_system": pl.String,
    "reference_policy": pl.String,
    "reference_budget": pl.Int32,
    "queries": pl.Int32,
    "mean": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "reference_mean": pl.Float64,
    "delta": pl.Float64,
    "delta_ci_low": pl.Float64,
    "delta_ci_high": pl.Float64,
    "p_randomization": pl.Float64,
    "p_wilcoxon": pl.Float64,
    "p_holm": pl.Float64,
    "significant": pl.Boolean,
}


def grid_means(policy_budgets: pl.DataFrame) -> pl.DataFrame:
    """Means per (system, policy, budget), in the order the frame first names them.

    ``queries`` counts the queries with a coverage (those with relevant docs).

    Example:
        >>> pb = pl.DataFrame({"system": ["a", "a"], "policy": ["unit", "unit"],
        ...     "query_id": ["q1", "q2"], "budget": [128, 128], "coverage": [1.0, None],
        ...     "evidence_token_recall": [1.0, None], "answer_contained": [0.0, 1.0],
        ...     "tokens_used": [90, 110], "redundancy": [0.0, 0.5]})
        >>> grid_means(pb).select("coverage", "answer_contained", "tokens_used", "queries").row(0)
        (1.0, 0.5, 100.0, 1)
    """
    return policy_budgets.group_by("system", "policy", "budget", maintain_order=True).agg(
        *(pl.col(m).mean().cast(pl.Float64) for m in MEASURES),
        pl.col("coverage").is_not_null().sum().cast(pl.Int32).alias("queries"),
    )


def reference_cell(policy_budgets: pl.DataFrame, baseline: str) -> tuple[str, str]:
    """The cell every other is tested against: ``baseline`` with ``unit`` (else the first policy).

    Raises:
        ValueError: ``baseline`` is not a system of the grid (naming the ones that are).
    """
    systems = policy_budgets["system"].unique(maintain_order=True).to_list()
    if baseline not in systems:
        raise ValueError(f"baseline {baseline!r} is not in the grid; its systems: {systems}")
    policies = policy_budgets["policy"].unique(maintain_order=True).to_list()
    return baseline, ("unit" if "unit" in policies else policies[0])


def _cell(system: str, policy: str, budget: int | None = None) -> str:
    return f"{system} + {policy}" + ("" if budget is None else f" @{budget}")


def _paired(
    policy_budgets: pl.DataFrame, measure: str, cells: Sequence[tuple[str, str, int]]
) -> pl.DataFrame:
    """``system, query_id, metric, value`` for ``compare``: each cell a 'system', nulls dropped."""
    parts = []
    for system, policy, budget in cells:
        part = policy_budgets.filter(
            (pl.col("system") == system)
            & (pl.col("policy") == policy)
            & (pl.col("budget") == budget)
            & pl.col(measure).is_not_null()
        )
        parts.append(
            part.select(
                pl.lit(_cell(system, policy, budget)).alias("system"),
                "query_id",
                pl.lit(measure).alias("metric"),
                pl.col(measure).cast(pl.Float64).alias("value"),
            )
        )
    return pl.concat(parts)


def grid_significance(
    policy_budgets: pl.DataFrame, *, baseline: str, alpha: float = 0.05, seed: int = 0
) -> pl.DataFrame:
    """Every cell against the reference cell at its budget, and the efficiency test (module doc).

    Args:
        policy_budgets: the per-query grid (``system, policy, query_id, budget``, measures).
        baseline: the reference system (see :func:`reference_cell`).
        alpha: significance level (after Holm over the grid, for ``test == "grid"``).
        seed: seed of the permutations and bootstrap.

    Returns:
        One row per (test, metric, system, policy, budget): ``test`` is ``grid`` (against the
        reference cell, whose own rows have ``p_holm`` 1 and are never significant) or
        ``efficiency`` (:func:`efficiency_test`); ``mean``, its 95% interval, the reference's
        mean, ``delta``, p-values and ``significant``.

    Raises:
        ValueError: ``baseline`` is not in the grid.
    """
    ref_system, ref_policy = reference_cell(policy_budgets, baseline)
    cells = policy_budgets.select("system", "policy").unique(maintain_order=True).rows()
    budgets = policy_budgets["budget"].unique(maintain_order=True).to_list()
    rows: list[dict[str, object]] = []
    for measure in TESTED:
        for budget in budgets:
            ref = _cell(ref_system, ref_policy, budget)
            pq = _paired(policy_budgets, measure, [(s, p, budget) for s, p in cells])
            if pq.height == 0:
                continue
            tested = compare(pq, ref, alpha=alpha, seed=seed)
            by_name = {r["system"]: r for r in tested.iter_rows(named=True)}
            counts = dict(pq.group_by("system").len().iter_rows())
            for system, policy in cells:
                r = by_name[_cell(system, policy, budget)]
                rows.append(
                    {
                        "test": "grid",
                        "metric": measure,
                        "system": system,
                        "policy": policy,
                        "budget": budget,
                        "reference_system": ref_system,
                        "reference_policy": ref_policy,
                        "reference_budget": budget,
                        "queries": counts[_cell(system, policy, budget)],
                        "mean": r["mean"],
                        "ci_low": r["ci_low"],
                        "ci_high": r["ci_high"],
                        "reference_mean": r["mean"] - r["delta"],
                        "delta": r["delta"],
                        "p_randomization": r["p_randomization"],
                        "p_wilcoxon": r["p_wilcoxon"],
                    }
                )
    if not rows:
        return efficiency_test(policy_budgets, seed=seed)
    grid = pl.DataFrame(rows, schema={k: v for k, v in _SCHEMA.items() if k in rows[0]})
    grid = _holm_over_grid(grid, alpha)
    return pl.concat([grid, efficiency_test(policy_budgets, seed=seed)], how="diagonal_relaxed")


def _holm_over_grid(grid: pl.DataFrame, alpha: float) -> pl.DataFrame:
    """``p_holm`` and ``significant``: Holm over every non-reference cell of one metric."""
    is_ref = (pl.col("system") == pl.col("reference_system")) & (
        pl.col("policy") == pl.col("reference_policy")
    )
    grid = grid.with_row_index("_row").with_columns(is_ref.alias("_ref"))
    adjusted: dict[int, float] = {}
    for (_metric,), part in grid.filter(~pl.col("_ref")).group_by("metric"):
        adjusted.update(zip(part["_row"], holm(part["p_randomization"].to_list()), strict=True))
    p_holm = [adjusted.get(i, 1.0) for i in grid["_row"]]
    return (
        grid.with_columns(pl.Series("p_holm", p_holm, dtype=pl.Float64))
        .with_columns(((pl.col("p_holm") < alpha) & ~pl.col("_ref")).alias("significant"))
        .drop("_row", "_ref")
        .with_columns(
            pl.lit(None, pl.Float64).alias("delta_ci_low"),
            pl.lit(None, pl.Float64).alias("delta_ci_high"),
        )
        .select(list(_SCHEMA))
    )


def efficiency_test(
    policy_budgets: pl.DataFrame,
    *,
    budget: int = EFFICIENCY[0],
    reference: tuple[str, str] = EFFICIENCY[1],
    reference_budget: int = EFFICIENCY[2],
    seed: int = 0,
) -> pl.DataFrame:
    """The best cell at ``budget`` (by mean coverage) against ``reference`` at ``reference_budget``.

    Paired over the queries where the measure is defined, for coverage (the question) and
    answer containment; ``delta_ci_*`` is the bootstrap interval of the mean paired difference.
    ``significant``: the randomization p < 0.05 (one pre-stated test, not corrected).

    Returns:
        Two rows (``test == "efficiency"``), or none when the grid lacks either budget or the
        reference cell.
    """
    has = policy_budgets.filter(
        (pl.col("system") == reference[0])
        & (pl.col("policy") == reference[1])
        & (pl.col("budget") == reference_budget)
    ).height
    at = grid_means(policy_budgets.filter(pl.col("budget") == budget))
    if not has or at.height == 0 or at["coverage"].is_null().all():
        return pl.DataFrame(schema=_SCHEMA)
    # the first of the best in the grid's order: a tie goes to the cell named first
    best_row = at.filter(pl.col("coverage") == pl.col("coverage").max()).row(0, named=True)
    best = (best_row["system"], best_row["policy"], budget)
    ref = (*reference, reference_budget)
    rows = []
    for measure in TESTED:
        pq = _paired(policy_budgets, measure, [best, ref])
        wide = pq.pivot(on="system", index="query_id", values="value").drop_nulls()
        if wide.height == 0:
            continue
        x, y = wide[_cell(*best)].to_numpy(), wide[_cell(*ref)].to_numpy()
        tested = compare(
            pq.filter(pl.col("query_id").is_in(wide["query_id"].implode())), _cell(*ref), seed=seed
        )
        r = tested.filter(pl.col("system") == _cell(*best)).row(0, named=True)
        lo, hi = bootstrap_ci(np.asarray(x - y), seed=seed)
        rows.append(
            {
                "test": "efficiency",
                "metric": measure,
                "system": best[0],
                "policy": best[1],
                "budget": budget,
                "reference_system": reference[0],
                "reference_policy": reference[1],
                "reference_budget": reference_budget,
                "queries": wide.height,
                "mean": float(x.mean()),
                "ci_low": r["ci_low"],
                "ci_high": r["ci_high"],
                "reference_mean": float(y.mean()),
                "delta": float(x.mean() - y.mean()),
                "delta_ci_low": lo,
                "delta_ci_high": hi,
                "p_randomization": r["p_randomization"],
                "p_wilcoxon": r["p_wilcoxon"],
                "p_holm": None,
                "significant": r["p_randomization"] < 0.05,
            }
        )
    return pl.DataFrame(rows, schema=_SCHEMA)


def plot_systems(
    policy_budgets: pl.DataFrame, *, baseline: str | None, budget: int = BUDGET, top: int = 3
) -> list[str]:
    """The systems the grid's plot draws by default, in the grid's order.

    The baseline (its ``unit`` line is the reference cell), ``message`` (the efficiency
    question's reference) when present, and the ``top`` other systems with the highest coverage
    at ``budget`` under their best policy (the budget nearest ``budget`` when it was not run):
    the reference lines and the frontier, at most ``top + 2`` colours.

    Example:
        >>> pb = pl.DataFrame({"system": ["a", "b", "c"], "policy": ["unit"] * 3,
        ...     "query_id": ["q"] * 3, "budget": [512] * 3, "coverage": [0.1, 0.9, 0.5]})
        >>> plot_systems(pb, baseline="a", top=1)
        ['a', 'b']
    """
    budgets = policy_budgets["budget"].unique().to_list()
    if not budgets:
        return []
    nearest = min(budgets, key=lambda b: (abs(b - budget), b))
    best = (
        policy_budgets.filter(pl.col("budget") == nearest)
        .group_by("system", "policy", maintain_order=True)
        .agg(pl.col("coverage").mean())
        .group_by("system", maintain_order=True)
        .agg(pl.col("coverage").max())
    )
    named = best["system"].to_list()
    keep = {s for s in (baseline, EFFICIENCY[1][0]) if s in named}
    ranked = best.filter(~pl.col("system").is_in(list(keep))).sort(
        "coverage", descending=True, nulls_last=True, maintain_order=True
    )
    keep.update(ranked["system"].head(top).to_list())
    order = policy_budgets["system"].unique(maintain_order=True).to_list()
    return [s for s in order if s in keep]
