"""What an evaluation measured: :class:`Evaluation`, with its tables and marked headlines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from convlab.evaluation.config import HEADLINE

if TYPE_CHECKING:
    from convlab.evaluation.lme_scores import OfficialScores

__all__ = ["Evaluation", "mark_significant"]


@dataclass(frozen=True, slots=True)
class Evaluation:
    """What :func:`evaluate` measured."""

    per_query: pl.DataFrame  # system, query_id, category, metric, value (coverage@B too)
    summary: pl.DataFrame  # system, metric, mean, queries
    by_category: pl.DataFrame  # system, category, metric, mean, queries
    significance: pl.DataFrame  # system, metric, mean, ci, delta, p values, significant
    category_significance: pl.DataFrame  # the same per category, for the HEADLINE metrics
    budgets: pl.DataFrame  # system, query_id, budget, coverage, tokens_used, ...
    hits: dict[str, pl.DataFrame]
    units: dict[str, pl.DataFrame]
    config: dict[str, Any]
    # system, policy, query_id, budget, ...: every resurrection policy (empty with only one)
    policy_budgets: pl.DataFrame = field(default_factory=pl.DataFrame)
    # system, fold, setting, params, train_mean, test_mean, ...: what each fold chose for the
    # cross-validated systems (empty without any)
    tuning: pl.DataFrame = field(default_factory=pl.DataFrame)
    # the grid's tests (convlab.evaluation.policy_grid.grid_significance); save_run fills it
    # when it is empty and the grid is not
    policy_significance: pl.DataFrame = field(default_factory=pl.DataFrame)
    # LongMemEval's official measures, under its protocol (EvalConfig.protocol); else None
    official: OfficialScores | None = None
    # query_id, group, fold: every query's cross-validation group and fold
    # (convlab.evaluation.folds; fold null for an unjudged query); empty when not recorded
    groups: pl.DataFrame = field(default_factory=pl.DataFrame)

    @property
    def systems(self) -> list[str]:
        """System names in the order they were given (the baseline first when it was)."""
        return [s["name"] for s in self.config["systems"]]

    def _in_system_order(self, frame: pl.DataFrame, *then: str) -> pl.DataFrame:
        order = {s: i for i, s in enumerate(self.systems)}
        key = pl.col("system").replace_strict(order, default=len(order), return_dtype=pl.Int32)
        return frame.sort(*then, key) if then else frame.sort(key)

    @property
    def headline_metrics(self) -> tuple[str, ...]:
        """The metrics of the headline tables (``EvalConfig.headline``)."""
        return tuple(self.config["config"].get("headline", HEADLINE))

    def table(self, metrics: tuple[str, ...] | None = None) -> pl.DataFrame:
        """Systems as rows (in the order given), the chosen metrics' means as columns."""
        metrics = metrics or self.headline_metrics
        wide = self.summary.filter(pl.col("metric").is_in(list(metrics))).pivot(
            on="metric", index="system", values="mean"
        )
        wide = wide.select("system", *[m for m in metrics if m in wide.columns])
        return self._in_system_order(wide)

    def headline(self, metrics: tuple[str, ...] | None = None) -> pl.DataFrame:
        """:meth:`table` with each metric marked ``*`` where it differs from the baseline.

        Marked when the paired randomization test, Holm-corrected, gives p < 0.05.
        """
        metrics = metrics or self.headline_metrics
        return mark_significant(self.table(metrics), self.significance, metrics, ["system"])

    def category_headline(self, metrics: tuple[str, ...] | None = None) -> pl.DataFrame:
        """Per (system, category), the metrics' means marked ``*`` as in :meth:`headline`.

        The tests are run inside each category (Holm-corrected over the systems).
        """
        metrics = metrics or self.headline_metrics
        wide = self.by_category.filter(pl.col("metric").is_in(list(metrics))).pivot(
            on="metric", index=["system", "category"], values="mean"
        )
        wide = wide.select("category", "system", *[m for m in metrics if m in wide.columns])
        wide = self._in_system_order(wide, "category")
        return mark_significant(wide, self.category_significance, metrics, ["category", "system"])


def mark_significant(
    table: pl.DataFrame, sig: pl.DataFrame, metrics: tuple[str, ...], keys: list[str]
) -> pl.DataFrame:
    """``table``'s metric columns as text, ``*`` appended where ``sig`` says significant.

    ``sig`` has the ``keys`` columns, ``metric`` and ``significant``; a row of ``table`` is
    matched on its ``keys`` values and the metric's column name.
    """
    flags: dict[tuple[Any, ...], bool] = {}
    if sig.height:
        for row in sig.filter(pl.col("metric").is_in(list(metrics))).iter_rows(named=True):
            flags[(*(row[k] for k in keys), row["metric"])] = bool(row["significant"])
    key_values = list(table.select(keys).iter_rows())
    cols = [
        pl.Series(
            m,
            [
                None if v is None else f"{v:.3f}{'*' if flags.get((*kv, m)) else ''}"
                for kv, v in zip(key_values, table[m], strict=True)
            ],
            dtype=pl.String,
        )
        for m in metrics
        if m in table.columns
    ]
    return table.with_columns(cols)
