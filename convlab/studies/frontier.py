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

:func:`run` (a :class:`Frontier`: the run folders by data set, :func:`read_run` each, refused
where the run did not record its costs or what made it) writes the page (:func:`page_markdown`:
the command that generated it, each run's command and commit, the table, the plot and the
choice) as the standard run folder's ``report.md`` (:mod:`convlab.studies.contract`:
``frontier.parquet`` the table, ``frontier.png`` the plot), and, when asked, where the docs keep
it, its plot beside it.

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

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import polars as pl

from convlab.atomic import write_text_atomic
from convlab.evaluation.provenance import RunError, run_provenance
from convlab.evaluation.significance import holm, paired_randomization
from convlab.studies.contract import STUDIES, Study, StudyResult, source_record, write_study

__all__ = [
    "Choice",
    "Frontier",
    "FrontierRun",
    "Verdict",
    "choose_default",
    "frontier_markdown",
    "frontier_table",
    "page_markdown",
    "read_run",
    "run",
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Frontier:
    """The frontier of run folders and the default it implies (:func:`run`).

    Attributes:
        runs: ``(data set, folder)`` of each ``eval.run`` folder (``per_query.parquet`` and
            ``config.json`` with ``system_costs`` and what made it).
        default: today's default system's name in the runs (None: the project's default).
        tolerance: how far below the default's recall@5 a cheaper system may be.
        require: data sets the rule needs: while one has no run, the default stays.
    """

    study: ClassVar[str] = "frontier"
    runs: tuple[tuple[str, Path], ...]
    default: str | None = None
    tolerance: float = 0.01
    require: tuple[str, ...] = ()


def read_run(data: str, folder: Path) -> tuple[FrontierRun, str]:
    """The run's frontier inputs and its provenance line for the page.

    Raises:
        RunError: a missing file, no ``system_costs``, or no command and commit
            (:func:`convlab.evaluation.provenance.run_provenance`).
    """
    config_path, pq_path = folder / "config.json", folder / "per_query.parquet"
    for path in (config_path, pq_path):
        if not path.is_file():
            raise RunError(f"{path}: missing (is {folder} a run folder of eval.run?)")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise RunError(f"{config_path}:{e.lineno}: not JSON ({e.msg})") from None
    costs = config.get("system_costs")
    if not costs:
        raise RunError(f"{config_path}: no system_costs (run it again with this eval.run)")
    prov = run_provenance(folder, config)
    frontier_run = FrontierRun(
        data=data,
        per_query=pl.read_parquet(pq_path, glob=False),
        costs=pl.DataFrame(costs, schema_overrides={"cpu_seconds": pl.Float64}),
    )
    line = f"- **{data}**: `{folder.name}`, made by `{prov.command}` at commit `{prov.commit}`"
    return frontier_run, line


def page_markdown(
    table: pl.DataFrame,
    choice: Choice,
    default: str,
    *,
    command: str,
    runs: Sequence[str],
    image: str = "frontier.png",
) -> str:
    """The page: what generated it, each run's provenance line, the plot, the table, the choice.

    ``image`` is the plot's file name, beside the page.
    """
    return "\n".join([
        "# The frontier: quality against embedding cost",
        "",
        f"Generated by `{command}` from these runs (never edited by hand):",
        "",
        *runs,
        "",
        f"Today's default is `{default}`. Δ is each system's mean minus the default's on the same "
        "queries; p is the paired randomization test, Holm-adjusted over every comparison of "
        "the page (`*`: below 0.05). Costs are what each system embeds: tokens embedded per "
        "token of message text, and the CPU-seconds of that embedding measured in the run "
        "(n/a: the run read its vectors from a warm cache).",
        "",
        f"![recall@5 against embedding cost]({image})",
        "",
        frontier_markdown(table, choice, default),
    ])  # fmt: skip


def run(
    config: Frontier, out: Path, *, command: Sequence[str] = (), page: Path | None = None
) -> StudyResult:
    """The frontier as a standard run folder ``out``, and as ``page`` (its plot beside) if asked.

    Raises:
        ValueError: a run folder that cannot be read or records no provenance (``RunError``),
            or a run without the default or a system without its costs.
    """
    from convlab.evaluation.plots import frontier
    from convlab.systems import default_system

    default = config.default or default_system().name
    read = [read_run(data, folder) for data, folder in config.runs]
    table = frontier_table([r for r, _ in read], default)
    choice = choose_default(table, default, tolerance=config.tolerance, required=config.require)
    lines = [line for _, line in read]
    text = page_markdown(table, choice, default, command=shlex.join(command), runs=lines)
    figure = frontier(table, default)
    out.mkdir(parents=True, exist_ok=True)
    figure.savefig(out / "frontier.png", dpi=110)
    if page is not None:
        page.parent.mkdir(parents=True, exist_ok=True)
        image = page.with_suffix(".png")
        figure.savefig(image, dpi=110)
        write_text_atomic(
            page,
            page_markdown(
                table, choice, default, command=shlex.join(command), runs=lines, image=image.name
            ),
        )
    metrics = {
        "default": default,
        "chosen": choice.system,
        "changed": choice.changed,
        "why": choice.why,
        "verdicts": {v.system: {"holds": v.holds, "cost_ratio": v.cost_ratio, "why": v.why}
                     for v in choice.verdicts},
    }  # fmt: skip
    return write_study(
        out,
        config,
        metrics=metrics,
        report=text,
        frames={"frontier": table},
        command=command,
        data=source_record(*(folder for _, folder in config.runs)),
    )


STUDIES.add("frontier", Study("frontier", Frontier, run, "eval.frontier"))
