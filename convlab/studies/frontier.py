"""The frontier: each system's quality against its embedding cost, and the default it implies.

For every data set (one run folder each: its ``per_query.parquet`` and the ``system_costs`` its
``config.json`` records, :mod:`convlab.evaluation.system_costs`), :func:`frontier_table` gives
each system's mean of every metric, its difference from today's default system, the paired
randomization p of that difference (:func:`convlab.evaluation.significance.
paired_randomization`, over the queries both scored) and its Holm-adjusted p over **every
comparison of the table** (all systems, metrics and data sets: one family), beside its tokens
embedded per token of text and its CPU-seconds.

:func:`choose_default` applies the rule that the default follows the measurement: a system
replaces today's default only if it is cheaper on every data set (fewer CPU-seconds where both
are measured, else fewer tokens embedded per token of text) and its recall@5 is within
``tolerance`` (0.01) of the default's, or better, on every data set. Of the systems that hold,
the cheapest (the smallest mean cost relative to the default's) is chosen; when none holds,
today's default stays, and each candidate's verdict says why.

Example:
    >>> pq = pl.DataFrame({"system": ["d", "d", "c", "c"], "query_id": ["q1", "q2"] * 2,
    ...                    "metric": ["recall@5"] * 4, "value": [1.0, 0.0, 1.0, 0.0]})
    >>> costs = pl.DataFrame({"system": ["d", "c"], "tokens_per_text_token": [5.0, 1.0],
    ...                       "cpu_seconds": [50.0, 5.0]})
    >>> t = frontier_table([FrontierRun(data="x", per_query=pq, costs=costs)], "d",
    ...                    metrics=("recall@5",))
    >>> choose_default(t, "d").system
    'c'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from convlab.evaluation.significance import holm, paired_randomization

__all__ = [
    "Choice",
    "FrontierRun",
    "Verdict",
    "choose_default",
    "frontier_markdown",
    "frontier_table",
]

METRICS = ("recall@5", "ndcg@10")
"""The metrics of the frontier: the rule reads the first."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FrontierRun:
    """One data set's run, as read from its folder.

    Attributes:
        data: the data set's name (``LoCoMo``).
        per_query: ``system, query_id, metric, value`` (a run folder's ``per_query.parquet``).
        costs: ``system, tokens_per_text_token, cpu_seconds`` (``config.json``'s
            ``system_costs``; ``cpu_seconds`` null where the run did not measure it).
    """

    data: str
    per_query: pl.DataFrame
    costs: pl.DataFrame


def _paired(pq: pl.DataFrame, system: str, default: str, metric: str) -> tuple[float, float, float]:
    """The system's mean, the default's, and the paired p over the queries both scored."""
    rows = pq.filter(pl.col("metric") == metric)
    a = rows.filter(pl.col("system") == system).select("query_id", pl.col("value").alias("a"))
    b = rows.filter(pl.col("system") == default).select("query_id", pl.col("value").alias("b"))
    both = a.join(b, on="query_id", how="inner")
    if both.is_empty():
        raise ValueError(f"no query has {metric} for both {system!r} and the default {default!r}")
    x, y = both["a"].to_numpy(), both["b"].to_numpy()
    p = 1.0 if system == default else paired_randomization(x, y)
    return float(np.mean(x)), float(np.mean(y)), p


def frontier_table(
    runs: Sequence[FrontierRun], default: str, *, metrics: Sequence[str] = METRICS
) -> pl.DataFrame:
    """One row per data set, system and metric: means, the difference from ``default``, p, costs.

    Columns: ``data, system, metric, mean, default_mean, delta, p, p_holm,
    tokens_per_text_token, cpu_seconds``. The default's own rows have delta 0 and p 1 and are
    left out of the Holm family.

    Raises:
        ValueError: a run without the default system, or a system without its costs.
    """
    rows = []
    for run in runs:
        systems = list(dict.fromkeys(run.per_query["system"].to_list()))
        if default not in systems:
            raise ValueError(f"{run.data}: the run has no system {default!r} (today's default)")
        costs = {r["system"]: r for r in run.costs.to_dicts()}
        for system in systems:
            if system not in costs:
                raise ValueError(f"{run.data}: system {system!r} has no recorded costs")
            cost = costs[system]
            for metric in metrics:
                mean, base, p = _paired(run.per_query, system, default, metric)
                rows.append(
                    {
                        "data": run.data,
                        "system": system,
                        "metric": metric,
                        "mean": mean,
                        "default_mean": base,
                        "delta": mean - base,
                        "p": p,
                        "tokens_per_text_token": float(cost["tokens_per_text_token"]),
                        "cpu_seconds": cost.get("cpu_seconds"),
                    }
                )
    table = pl.DataFrame(rows, schema_overrides={"cpu_seconds": pl.Float64})
    tested = [i for i, r in enumerate(rows) if r["system"] != default]
    adjusted = dict(zip(tested, holm([rows[i]["p"] for i in tested]), strict=True))
    return table.with_columns(
        pl.Series("p_holm", [adjusted.get(i, 1.0) for i in range(len(rows))], dtype=pl.Float64)
    )


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether one system may replace the default, and why (one line)."""

    system: str
    holds: bool
    cost_ratio: float | None
    why: str


@dataclass(frozen=True, slots=True)
class Choice:
    """The default system the frontier implies: ``system``, why, and every candidate's verdict."""

    system: str
    changed: bool
    why: str
    verdicts: tuple[Verdict, ...]


def _cost(row: dict[str, object], base: dict[str, object]) -> tuple[float, float, str]:
    """The system's and the default's cost on one data set, and its unit."""
    cpu, base_cpu = row["cpu_seconds"], base["cpu_seconds"]
    if isinstance(cpu, float) and isinstance(base_cpu, float):
        return cpu, base_cpu, "CPU-s"
    return (
        float(str(row["tokens_per_text_token"])),
        float(str(base["tokens_per_text_token"])),
        "tok/tok",
    )


def _verdict(table: pl.DataFrame, system: str, default: str, metric: str, tol: float) -> Verdict:
    mine = table.filter((pl.col("metric") == metric) & (pl.col("system") == system))
    base = {
        r["data"]: r
        for r in table.filter(
            (pl.col("metric") == metric) & (pl.col("system") == default)
        ).to_dicts()
    }
    missing = sorted(set(base) - set(mine["data"].to_list()))
    if missing:
        return Verdict(system, False, None, f"not measured on {', '.join(missing)}")
    ratios, costlier, worse = [], [], []
    for row in mine.to_dicts():
        cost, base_cost, unit = _cost(row, base[row["data"]])
        ratios.append(cost / base_cost if base_cost else float("inf"))
        if cost >= base_cost:
            costlier.append(f"{row['data']} ({cost:.3g} vs {base_cost:.3g} {unit})")
        if row["delta"] < -tol:
            worse.append(f"{row['data']} ({row['delta']:+.3f})")
    ratio = float(np.mean(ratios))
    if costlier:
        return Verdict(system, False, ratio, f"not cheaper on {'; '.join(costlier)}")
    if worse:
        return Verdict(
            system, False, ratio, f"{metric} more than {tol} below on {'; '.join(worse)}"
        )
    return Verdict(system, True, ratio, f"cheaper everywhere (cost {ratio:.2f}x), {metric} holds")


def choose_default(
    table: pl.DataFrame,
    default: str,
    *,
    metric: str = "recall@5",
    tolerance: float = 0.01,
    required: Sequence[str] = (),
) -> Choice:
    """Today's default, or the cheapest system that holds its ``metric`` on every data set.

    ``required`` names the data sets the rule needs: while one of them is not in the table,
    today's default stays whatever the others say (each verdict is still given).

    Raises:
        ValueError: the table has no row of ``default`` for ``metric``.
    """
    if table.filter((pl.col("system") == default) & (pl.col("metric") == metric)).is_empty():
        raise ValueError(f"the frontier has no {metric} of the default {default!r}")
    others = [s for s in dict.fromkeys(table["system"].to_list()) if s != default]
    verdicts = tuple(_verdict(table, s, default, metric, tolerance) for s in others)
    holding = [v for v in verdicts if v.holds and v.cost_ratio is not None]
    missing = [d for d in required if d not in set(table["data"].to_list())]
    if missing:
        held = ", ".join(v.system for v in holding) or "none"
        why = (
            f"the rule needs every data set, and these have no run yet: {', '.join(missing)}; "
            f"so today's default stays (holding on the data sets measured: {held})"
        )
        return Choice(default, False, why, verdicts)
    if not holding:
        why = (
            f"no cheaper system is within {tolerance} {metric} of {default} (or better) on "
            "every data set, so today's default stays"
        )
        return Choice(default, False, why, verdicts)
    best = min(holding, key=lambda v: (v.cost_ratio, v.system))
    why = (
        f"{best.system} is cheaper than {default} on every data set (mean cost "
        f"{best.cost_ratio:.2f}x) and within {tolerance} {metric} of it, or better, on each"
    )
    return Choice(best.system, True, why, verdicts)


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def frontier_markdown(
    table: pl.DataFrame, choice: Choice, default: str, *, alpha: float = 0.05
) -> str:
    """The table, one section per data set, and the choice with every candidate's verdict.

    A difference whose Holm-adjusted p is below ``alpha`` is marked ``*``.
    """
    metrics = list(dict.fromkeys(table["metric"].to_list()))
    head = ["system", *[f"{m} (Δ, p Holm)" for m in metrics], "tokens/text token", "CPU-s"]
    lines: list[str] = []
    for (data,), part in table.group_by("data", maintain_order=True):
        lines += [f"### {data}", "", "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
        for (system,), rows in part.group_by("system", maintain_order=True):
            by = {r["metric"]: r for r in rows.to_dicts()}
            cells = [f"`{system}`"]
            for m in metrics:
                r = by[m]
                star = "*" if r["p_holm"] < alpha and system != default else ""
                cells.append(f"{r['mean']:.3f} ({r['delta']:+.3f}{star}, {r['p_holm']:.3g})")
            first = rows.row(0, named=True)
            cells += [f"{first['tokens_per_text_token']:.2f}", _fmt(first["cpu_seconds"], ".1f")]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        "## The default",
        "",
        f"**{choice.system}** {f'replaces {default}' if choice.changed else 'stays'}: "
        f"{choice.why}.",
        "",
        "| candidate | holds | mean cost vs default | why |",
        "|---|---|---|---|",
    ]
    for v in choice.verdicts:
        ratio = _fmt(v.cost_ratio, ".2f")
        lines.append(f"| `{v.system}` | {'yes' if v.holds else 'no'} | {ratio} | {v.why} |")
    return "\n".join(lines) + "\n"
