"""The resurrection cell chosen by CV over run folders, as one standard run folder.

:func:`run` (a :class:`PolicyCV`) reads each folder's ``policy_budgets.parquet`` (from
``eval.run --resurrection ...``, or a folder of ``eval.resurrection_grid``, whose ``grid.json``
names the run it was made from) and runs :func:`convlab.studies.policy_cv.policy_cv` on it.
It writes ``policy_cv.json`` and ``policy_cv.md`` (also ``report.md``), per folder
``NAME/per_query.parquet`` (:func:`convlab.studies.policy_cv.cv_per_query`, for the lever
table), ``NAME/groups.parquet`` and ``NAME/config.json`` (each query's group and fold at the
compared budget), and the contract's ``config.json`` and ``metrics.json``
(:mod:`convlab.studies.contract`). A folder without a grid is listed as such.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from convlab.atomic import write_file_atomic, write_text_atomic
from convlab.evaluation import folds
from convlab.studies.contract import STUDIES, Study, StudyResult, source_record, write_study
from convlab.studies.policy_cv import BUDGETS, cv_cells, cv_per_query, policy_cv

__all__ = ["PolicyCV", "markdown", "run", "source"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyCV:
    """The resurrection cell chosen by CV on run folders (:func:`run`).

    Attributes:
        runs: folders holding ``policy_budgets.parquet``.
        budgets: the budgets reported.
        budget: the CV-chosen cell compared with the reference at this budget.
        reference_budget: the reference cell's budget.
        folds: the most folds (fewer with fewer groups).
        seed: the seed of the tests.
    """

    study: ClassVar[str] = "policy-cv"
    runs: tuple[Path, ...]
    budgets: tuple[int, ...] = BUDGETS
    budget: int = 512
    reference_budget: int = 1024
    folds: int = 10
    seed: int = 0


def source(folder: Path) -> Path:
    """The run folder behind ``folder``: the run a ``grid.json`` names, else ``folder`` itself.

    Only ``eval.resurrection_grid`` writes ``grid.json``; an ``eval.run`` folder holds none
    (both hold a ``config.json``).
    """
    if not (folder / "grid.json").exists():
        return folder
    run = json.loads((folder / "grid.json").read_text()).get("run")
    return Path(run) if isinstance(run, str) else folder


def _baseline(run: Path) -> str | None:
    """The run's baseline (``config.json``), or None."""
    if not (run / "config.json").exists():
        return None
    baseline = json.loads((run / "config.json").read_text()).get("baseline")
    return baseline if isinstance(baseline, str) else None


def _qrels(run: Path) -> pl.DataFrame | None:
    """The qrels that place queries in conversations (:func:`convlab.evaluation.folds.groups`).

    None where each query has its own haystack (LongMemEval: each question its own group) or
    the run keeps no qrels.
    """
    qrels, haystacks = folds.run_labels(run)
    return None if haystacks else qrels


def _f(x: float | None, sign: bool = False) -> str:
    return "" if x is None else (f"{x:+.3f}" if sign else f"{x:.3f}")


def markdown(results: dict[str, Any]) -> str:
    """``policy_cv.md``: per folder the chosen cells per budget, the reference and the tests."""
    lines = [
        "# Resurrection policy chosen by cross-validation",
        "",
        f"`{results['command']}`",
        "",
        "Per budget, the (system, policy) cell with the best mean coverage on each fold's "
        "training groups (conversations; a LongMemEval question is its own group), and the "
        "held-out means of those choices. `delta`: CV-chosen minus the reference, paired over "
        "queries (95% bootstrap interval, randomization p). `in-sample best` reads the test "
        "queries and is shown only for contrast.",
    ]
    for name, r in results["runs"].items():
        lines += ["", f"## {name}", ""]
        if "error" in r:
            lines.append(f"Not measured: {r['error']}")
            continue
        lines += [
            "| budget | folds | groups | queries | coverage | answer contained | "
            "cells chosen (folds) |",
            "|---|---|---|---|---|---|---|",
        ]
        for b, m in r["budgets"].items():
            chosen = ", ".join(f"`{c}` ({n})" for c, n in m["chosen"].items())
            lines.append(
                f"| {b} | {m['folds']} | {m['groups']} | {m['queries']} | {_f(m['coverage'])} | "
                f"{_f(m['answer_contained'])} | {chosen} |"
            )
        ref = r["reference"]
        note = "" if ref["message_in_grid"] else " (no `message` system in the grid: baseline)"
        lines += [
            "",
            f"Reference `{ref['system']}` + `{ref['policy']}` @{ref['budget']}{note}: coverage "
            f"{_f(ref['coverage'])}, answer contained {_f(ref['answer_contained'])}.",
        ]
        if "in_sample" in r:
            s = r["in_sample"]
            lines.append(
                f"In-sample best @{r['comparison']['budget']}: `{s['system']}` + "
                f"`{s['policy']}`, coverage {_f(s['coverage'])}."
            )
        lines += ["", "| measure | queries | CV | reference | delta | delta 95% CI | p | Holm p |"]
        lines += ["|---|---|---|---|---|---|---|---|"]
        for measure in ("coverage", "answer_contained"):
            c = r["comparison"].get(measure)
            if not c or not c["queries"]:
                continue
            lo, hi = c["delta_ci"]
            lines.append(
                f"| {measure} | {c['queries']} | {_f(c['cv'])} | {_f(c['reference'])} | "
                f"{_f(c['delta'], True)} | [{_f(lo, True)}, {_f(hi, True)}] | {c['p']:.4f} | "
                f"{c.get('p_holm', float('nan')):.4f} |"
            )
        lines += _policy_lines(r)
    return "\n".join(lines) + "\n"


def _policy_lines(r: dict[str, Any]) -> list[str]:
    """Each policy family chosen by CV alone: coverage and containment per budget, and its test."""
    families = r.get("policies") or {}
    if not families:
        return []
    budgets = list(next(iter(families.values()))["budgets"])
    at = r["comparison"]["budget"]
    head = " | ".join(f"coverage@{b} | contained@{b}" for b in budgets)
    lines = [
        "",
        "Each policy family chosen by CV alone (its system and its parameters, e.g. window's n, "
        f"on the training folds); delta at {at} against the reference, Holm over every test of "
        "this grid.",
        "",
        f"| policy | {head} | chosen @{at} (folds) | delta coverage | Holm p | "
        "delta contained | Holm p |",
        "|---|" + "---|---|" * len(budgets) + "---|---|---|---|---|",
    ]
    for family, row in families.items():
        cells = " | ".join(
            f"{_f(row['budgets'].get(b, {}).get('coverage'))} | "
            f"{_f(row['budgets'].get(b, {}).get('answer_contained'))}"
            for b in budgets
        )
        chosen = row["budgets"].get(str(at), {}).get("chosen", {})
        tests = []
        for m in ("coverage", "answer_contained"):
            c = row["comparison"].get(m) or {}
            p = c.get("p_holm")
            tests.append(f"{_f(c.get('delta'), True)} | {'' if p is None else f'{p:.4f}'}")
        lines.append(
            f"| {family} | {cells} | "
            + ", ".join(f"`{c}` ({n})" for c, n in chosen.items())
            + f" | {' | '.join(tests)} |"
        )
    return lines


def _one(config: PolicyCV, grid: Path) -> tuple[dict[str, Any], pl.DataFrame, pl.DataFrame, bool]:
    """One folder's figures, its per-query values and its groups (and whether by question)."""
    src = source(grid.parent)
    frame = pl.read_parquet(grid)
    qrels, baseline = _qrels(src), _baseline(src)
    held, _ = cv_cells(frame, config.budget, folds=config.folds, qrels=qrels)
    per_query = cv_per_query(
        frame,
        baseline=baseline,
        qrels=qrels,
        budget=config.budget,
        reference_budget=config.reference_budget,
        folds=config.folds,
    )
    figures = policy_cv(
        frame,
        baseline=baseline,
        qrels=qrels,
        budgets=config.budgets,
        budget=config.budget,
        reference_budget=config.reference_budget,
        folds=config.folds,
        seed=config.seed,
    )
    return figures, per_query, held.select("query_id", "group", "fold"), folds.run_labels(src)[1]


def run(config: PolicyCV, out: Path, *, command: Sequence[str] = ()) -> StudyResult:
    """Every folder's CV-chosen cells, as a standard run folder (see the module docstring).

    Raises:
        ValueError: a folder that does not exist, or a grid that cannot be read or split.
    """
    results: dict[str, Any] = {"command": shlex.join(command), "runs": {}}
    written: dict[str, tuple[pl.DataFrame, pl.DataFrame, bool]] = {}
    for folder in config.runs:
        grid = folder / "policy_budgets.parquet"
        if not folder.is_dir():
            raise ValueError(f"{folder}: no such folder")
        if not grid.exists():
            results["runs"][str(folder)] = {
                "error": f"{grid} does not exist (make one with python -m eval.resurrection_grid "
                f"{folder} --data DATA --out DIR, then pass DIR)"
            }
            continue
        try:
            figures, per_query, groups, haystacks = _one(config, grid)
        except (ValueError, pl.exceptions.PolarsError) as exc:  # LoadError is a ValueError
            raise ValueError(f"{grid}: {exc}") from exc
        results["runs"][str(folder)] = figures
        written[folder.name] = (per_query, groups, haystacks)
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "policy_cv.json", json.dumps(results, indent=1) + "\n")
    md = markdown(results)
    write_text_atomic(out / "policy_cv.md", md)
    recorded = {}
    for name, (per_query, groups, haystacks) in written.items():  # the lever table's input
        (out / name).mkdir(exist_ok=True)
        write_file_atomic(out / name / "per_query.parquet", per_query.write_parquet)
        record: dict[str, Any] = {"command": results["command"], "run": name}
        record["groups"] = recorded[name] = folds.save(out / name, groups, haystacks=haystacks)
        write_text_atomic(out / name / "config.json", json.dumps(record, indent=1) + "\n")
    return write_study(
        out,
        config,
        metrics={"runs": results["runs"]},
        report=md,
        command=command,
        data=source_record(*(source(f) for f in config.runs if f.is_dir())),
        extra={"groups": recorded},
    )


STUDIES.add("policy-cv", Study("policy-cv", PolicyCV, run, "eval.policy_cv"))
