"""The lever table: every research lever tried, with its held-out delta, significance and cost.

A :class:`Lever` names one comparison: a system with the lever and the same system without it
(``baseline``), both scored per query in one run folder's ``per_query.parquet`` (the schema of
``python -m eval.run``: ``system, query_id, category, metric, value``; other drivers that write the
same schema, the fine-tuning, routing and policy studies, are read the same way). Every value is
held out: a run's cross-validated systems report each query under its own fold's choice.

:func:`lever_table` pairs the two systems on the queries both scored, and for each lever reports
both means, the delta, the paired randomization p (:func:`convlab.evaluation.significance.
paired_randomization`) and the Holm-adjusted p over **every row of the table** (one family: all
the levers tried, on every data set), beside the per-category deltas the lever targets and the
run's cost as the lever's row declares it. :func:`run` (a :class:`Levers`: the rows' TOML file
and the folder their runs are under) writes the table as a standard run folder
(:mod:`convlab.studies.contract`: ``levers.parquet``, ``report.md`` the page) and, when asked,
the page and its rows (``FILE`` and ``FILE`` with ``.json``) where the docs keep them.

Example:
    >>> pq = pl.DataFrame({"system": ["a", "a", "b", "b"], "query_id": ["q1", "q2"] * 2,
    ...                    "category": ["x", "y"] * 2, "metric": ["recall@5"] * 4,
    ...                    "value": [1.0, 0.0, 1.0, 1.0]})
    >>> row = Lever(lever="L", data="d", run="r", system="b", baseline="a")
    >>> t = lever_table([row], {"r": pq})
    >>> t.select("baseline_mean", "lever_mean", "delta", "queries").row(0)
    (0.5, 1.0, 0.5, 2)
"""

from __future__ import annotations

import fnmatch
import json
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from convlab.atomic import write_text_atomic
from convlab.defaults import FOLDS
from convlab.evaluation.significance import holm, paired_randomization
from convlab.files import CONFIG, read_text_regular
from convlab.studies.contract import STUDIES, Study, StudyResult, source_record, write_study

__all__ = [
    "Lever",
    "Levers",
    "lever_table",
    "page_markdown",
    "read_levers",
    "read_per_query",
    "read_run_qrels",
    "run",
    "table_markdown",
]


PER_QUERY = "per_query.parquet"


@dataclass(frozen=True, slots=True, kw_only=True)
class Lever:
    """One row of the lever table.

    Attributes:
        lever: the lever's name (``RM3``, ``fine-tuned MiniLM``, ...).
        data: the data set (``LoCoMo``, ``LongMemEval oracle``, ``real sessions``).
        run: the run folder holding both systems' per-query values (relative to the runs root).
        system: the system with the lever.
        baseline: the same system without it.
        metric: the metric compared (``recall@5``; ``coverage@512`` for a resurrection policy).
        point: the issue's point the lever belongs to (free text: ``2 query``).
        cost: what the lever costs, as measured (free text with its figure: ``+41 s embed``).
        categories: the categories whose deltas the table shows beside the overall one.
        note: one line on how the choice was made (fixed in advance, CV by conversation, ...).
        command: the command that made the run, for a run folder that does not record it.
        settings: the lever's settings, each a system of the run (names, or one shell-style
            pattern such as ``bm25:message k1=*``): the held-out system is then chosen among
            them per fold by grouped CV on the training queries
            (:func:`convlab.studies.select_cv.select_by_cv`), and ``system`` names it.
        folds: the most folds of that choice.
    """

    lever: str
    data: str
    run: str
    system: str
    baseline: str
    metric: str = "recall@5"
    point: str = ""
    cost: str = ""
    categories: tuple[str, ...] = field(default_factory=tuple)
    note: str = ""
    command: str = ""
    settings: tuple[str, ...] = field(default_factory=tuple)
    folds: int = FOLDS

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", tuple(self.categories))
        object.__setattr__(self, "settings", tuple(self.settings))
        for name in ("lever", "data", "run", "system", "baseline", "metric"):
            if not getattr(self, name):
                raise ValueError(f"a lever row needs {name!r}")
        if self.system == self.baseline:
            raise ValueError(f"lever {self.lever!r}: system and baseline are both {self.system!r}")


def read_levers(path: Path) -> list[Lever]:
    """The ``[[levers]]`` of a TOML file.

    Raises:
        ValueError: an unknown key or a missing field, naming the file and the row.
    """
    data = tomllib.loads(read_text_regular(path, limit=CONFIG))
    known = {f.name for f in fields(Lever)}
    rows: list[Lever] = []
    for i, row in enumerate(data.get("levers", []), start=1):
        unknown = sorted(set(row) - known)
        if unknown:
            raise ValueError(f"{path}: lever {i}: unknown key(s) {', '.join(unknown)}")
        try:
            rows.append(Lever(**row))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{path}: lever {i}: {exc}") from None
    if not rows:
        raise ValueError(f"{path}: no [[levers]] rows")
    return rows


def read_per_query(root: Path, runs: Sequence[str]) -> dict[str, pl.DataFrame]:
    """Each run folder's ``per_query.parquet`` (``root / run``), by run.

    Raises:
        FileNotFoundError: a run folder without it (naming the file).
    """
    out: dict[str, pl.DataFrame] = {}
    for run in dict.fromkeys(runs):
        path = root / run / PER_QUERY
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no per-query values (is {root / run} a run folder?)")
        out[run] = pl.read_parquet(path, glob=False)
    return out


def read_run_qrels(root: Path, runs: Sequence[str]) -> dict[str, pl.DataFrame | None]:
    """Each run folder's ``qrels.txt``, by run: what places its queries in conversations.

    None where the run has none, or where each query has its own haystack (LongMemEval: each
    question is then its own group, :func:`convlab.evaluation.folds.groups`).
    """
    from convlab.evaluation.folds import run_labels

    out: dict[str, pl.DataFrame | None] = {}
    for run in dict.fromkeys(runs):
        qrels, haystacks = run_labels(root / run)
        out[run] = None if haystacks else qrels
    return out


def _values(pq: pl.DataFrame, lever: Lever, system: str) -> pl.DataFrame:
    rows = pq.filter((pl.col("system") == system) & (pl.col("metric") == lever.metric))
    if rows.is_empty():
        raise ValueError(
            f"lever {lever.lever!r} ({lever.data}): run {lever.run!r} has no "
            f"{lever.metric} for system {system!r}"
        )
    has_category = "category" in rows.columns
    cols = ["query_id", *(["category"] if has_category else []), "value"]
    return rows.select(cols).unique("query_id", keep="first", maintain_order=True)


def _chosen(lever: Lever, pq: pl.DataFrame, qrels: pl.DataFrame | None) -> pl.DataFrame:
    """``pq`` with the lever's held-out system added: its settings chosen per fold by CV."""
    from convlab.studies.select_cv import select_by_cv

    systems = pq["system"].unique(maintain_order=True).to_list()
    names = [s for pattern in lever.settings for s in systems if fnmatch.fnmatchcase(s, pattern)]
    names = list(dict.fromkeys(names))
    if len(names) < 2:
        raise ValueError(
            f"lever {lever.lever!r} ({lever.data}): settings {list(lever.settings)} "
            f"match {names} in run {lever.run!r}; give two or more"
        )
    held, _ = select_by_cv(
        pq, names, name=lever.system, metric=lever.metric, folds=lever.folds, qrels=qrels
    )
    return pl.concat([pq, held], how="diagonal_relaxed")


def _paired(lever: Lever, pq: pl.DataFrame, qrels: pl.DataFrame | None = None) -> dict[str, Any]:
    if lever.settings:
        pq = _chosen(lever, pq, qrels)
    base = _values(pq, lever, lever.baseline)
    with_lever = _values(pq, lever, lever.system).select("query_id", pl.col("value").alias("lv"))
    pair = base.join(with_lever, on="query_id", how="inner", maintain_order="left")
    a, b = pair["lv"].to_numpy(), pair["value"].to_numpy()
    row: dict[str, Any] = {
        "point": lever.point,
        "lever": lever.lever,
        "data": lever.data,
        "system": lever.system,
        "baseline": lever.baseline,
        "metric": lever.metric,
        "queries": pair.height,
        "baseline_mean": float(b.mean()),
        "lever_mean": float(a.mean()),
        "delta": float((a - b).mean()),
        "p": paired_randomization(a, b),
        "cost": lever.cost,
        "note": lever.note,
    }
    deltas = []
    for cat in lever.categories:
        sub = pair.filter(pl.col("category") == cat) if "category" in pair.columns else pair[:0]
        if not sub.is_empty():
            d = sub["lv"].to_numpy() - sub["value"].to_numpy()
            deltas.append(f"{cat} {float(d.mean()):+.3f}")
    row["by_category"] = "; ".join(deltas)
    return row


def lever_table(
    levers: Sequence[Lever],
    per_query: Mapping[str, pl.DataFrame],
    qrels: Mapping[str, pl.DataFrame | None] | None = None,
) -> pl.DataFrame:
    """One row per lever: the two means on the paired queries, delta, p and Holm p over the table.

    Args:
        levers: the rows.
        per_query: each run's per-query values (:func:`read_per_query`), by the rows' ``run``.
        qrels: each run's qrels (grouping queries for a choice by CV where their ids do not
            name their conversation), by run.

    Raises:
        ValueError: a row whose run lacks one of its systems or metric, or no paired query.
    """
    rows = []
    for lever in levers:
        row = _paired(lever, per_query[lever.run], (qrels or {}).get(lever.run))
        if row["queries"] == 0:
            raise ValueError(f"lever {lever.lever!r} ({lever.data}): no query scored by both")
        rows.append(row)
    table = pl.DataFrame(rows)
    return table.with_columns(pl.Series("p_holm", holm(table["p"].to_list()), dtype=pl.Float64))


def table_markdown(table: pl.DataFrame, *, alpha: float = 0.05) -> str:
    """The table as Markdown: a star marks Holm p < ``alpha``."""
    head = (
        "| point | lever | data | system vs baseline | metric | n | baseline | lever | delta "
        "| Holm p | by category | cost | how chosen |"
    )
    lines = [head, "|" + "---|" * 13]
    for r in table.iter_rows(named=True):
        star = "*" if r["p_holm"] < alpha else ""
        lines.append(
            f"| {r['point']} | {r['lever']} | {r['data']} | `{r['system']}` vs `{r['baseline']}` "
            f"| {r['metric']} | {r['queries']} | {r['baseline_mean']:.3f} | {r['lever_mean']:.3f} "
            f"| {r['delta']:+.3f}{star} | {r['p_holm']:.4f} | {r['by_category']} | {r['cost']} "
            f"| {r['note']} |"
        )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class Levers:
    """The lever table of a TOML file's rows (:func:`run`).

    Attributes:
        table: the levers' TOML file (``eval/levers.toml``; :func:`read_levers`).
        runs: the folder the rows' run folders are under.
    """

    study: ClassVar[str] = "levers"
    table: Path
    runs: Path


def _record(folder: Path) -> dict[str, Any] | None:
    """The run's record of its command: ``config.json``, else a JSON report holding one."""
    for path in [folder / "config.json", *sorted(folder.glob("*.json"))]:
        if path.is_file():
            record = json.loads(read_text_regular(path, limit=CONFIG))
            if isinstance(record, dict) and record.get("command"):
                return record
    return None


def _provenance(root: Path, run: str, given: str) -> str:
    c = _record(root / run)
    if c is None:
        said = f"`{given}` (as the row gives it; the folder records none)" if given else "?"
        return f"- `{run}`: {said}"
    command = c.get("command") or "(no command recorded)"
    commit = c.get("commit") or "?"
    state = c.get("commit_state", "")
    return f"- `{run}`: `{command}` (commit {str(commit)[:10]}{', ' + state if state else ''})"


def page_markdown(table: pl.DataFrame, levers: Sequence[Lever], root: Path, command: str) -> str:
    """The page: the table, then each run folder's command and commit (its ``config.json``)."""
    given = {lv.run: lv.command for lv in levers if lv.command}
    runs = "\n".join(
        _provenance(root, run, given.get(run, "")) for run in dict.fromkeys(lv.run for lv in levers)
    )
    return (
        "# Levers tried\n\n"
        f"Generated by `{command}`; never edited by hand.\n\n"
        "Every value is held out (choices made on training folds only, or fixed in advance). "
        "`delta` is the lever's system minus the same system without it, paired over the queries "
        "both scored; the star marks Holm p < 0.05, Holm over every row of this table.\n\n"
        f"{table_markdown(table)}\n## Runs\n\n{runs}\n"
    )


def run(
    config: Levers, out: Path, *, command: Sequence[str] = (), page: Path | None = None
) -> StudyResult:
    """The lever table as a standard run folder ``out``, and as the page ``page`` when given.

    ``levers.parquet`` and ``metrics.json`` (``levers``) hold the rows, ``report.md`` the page;
    ``page`` and ``page`` with ``.json`` (the rows) are written only once all of it is known.

    Raises:
        OSError: a missing file (the TOML file, a run's ``per_query.parquet``).
        ValueError: a bad row, or a row its run cannot pair (:func:`lever_table`).
    """
    levers = read_levers(config.table)
    names = [lv.run for lv in levers]
    table = lever_table(
        levers, read_per_query(config.runs, names), read_run_qrels(config.runs, names)
    )
    text = page_markdown(table, levers, config.runs, shlex.join(command))
    rows = table.to_dicts()
    if page is not None:
        page.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(page, text)
        write_text_atomic(page.with_suffix(".json"), json.dumps(rows, indent=1))
    return write_study(
        out,
        config,
        metrics={"levers": rows},
        report=text,
        frames={"levers": table},
        command=command,
        data=source_record(*(config.runs / name for name in dict.fromkeys(names))),
    )


STUDIES.add("levers", Study("levers", Levers, run, "eval.levers"))
