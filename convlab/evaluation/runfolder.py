"""A run folder: an evaluation's results with the config that made them, every file whole.

The contract of sentence-transformers' evaluators (results beside ``get_config_dict()``, one
primary metric named): :func:`save_run` writes

- ``config.json``: every setting, the model id, package versions, the data fingerprint
  (:attr:`Evaluation.config`), and ``primary_metric``: the first headline metric;
- ``metrics.json``: summary, per-category means, resurrection by budget (means per system and
  budget), significance against the baseline, overall and per category;
- ``per_query.parquet``, ``budgets.parquet``, ``significance.parquet``,
  ``category_significance.parquet``: the frames behind them;
- ``runs/STEM.trec``: one TREC run per system, named by :func:`run_path` (a slug of the system's
  name and a short hash of it: a name is never a path);
- under LongMemEval's protocol (``EvalConfig.protocol == "longmemeval"``):
  ``official_per_query.parquet`` (the official measures per system, question, level and
  metric), ``official_summary.parquet`` (their strict and non-abstention means),
  ``official_significance.parquet`` (each system against the baseline, per average) and
  ``official_questions.parquet`` (which questions each average counts), the first three also
  under ``official`` in ``metrics.json``
  (:func:`convlab.evaluation.lme_scores.score_official`);
- ``groups.parquet``: every query's cross-validation group and fold (``query_id, group,
  fold``: :mod:`convlab.evaluation.folds`), named in ``config.json``'s ``groups`` (the rule,
  the number of groups and folds);
- ``tuning.parquet``: the setting each fold chose for each cross-validated system;
  ``systems.toml``: every system as run (an experiment file), and ``systems.chosen.toml``: the
  cross-validated systems with the settings chosen on all queries, fixed, beside the baseline
  and the systems they fuse, to run unchanged on other data
  (:func:`convlab.systems.file.transfer_systems`);
- with several resurrection policies (:func:`save_grid`): ``policy_budgets.parquet`` (the system
  x policy grid per query), ``policy_significance.parquet``
  (:func:`convlab.evaluation.policy_grid.grid_significance`) and ``policy_grid.png`` (answer
  containment and coverage against tokens used, :func:`convlab.evaluation.plots.policy_grid`);
- ``recall_at_k.png``, ``coverage_by_budget.png``, ``recall_by_category.png``,
  ``unit_lengths.png`` and ``report.md`` (:func:`convlab.evaluation.report.write_report`).

Each file is written to a temporary name, fsynced and renamed, so a run killed half way leaves
whole files only. ``qrels.txt`` is the labels' business
(:func:`convlab.evaluation.queries.write_qrels`).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from convlab.atomic import write_file_atomic, write_text_atomic
from convlab.evaluation.provenance import source_commit
from convlab.evaluation.queries import write_run
from convlab.evaluation.report import write_report

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from convlab.evaluation.result import Evaluation

__all__ = [
    "BUDGET_MEANS",
    "metrics_record",
    "primary_metric",
    "provenance_fields",
    "run_path",
    "save_grid",
    "save_run",
    "with_policy_significance",
]

BUDGET_MEANS = (
    "coverage",
    "evidence_token_recall",
    "tokens_used",
    "answer_contained",
    "redundancy",
)
"""The resurrection measures averaged per (system, budget) in ``metrics.json``."""


def run_path(folder: Path, name: str) -> Path:
    """The TREC run of system ``name`` in the run folder ``folder``: ``runs/STEM.trec``.

    ``STEM`` is :func:`convlab.systems.names.file_stem` of the name, so every name, however
    hostile (``../../x``, ``/etc/x``, control bytes), stays in ``folder/runs``. A folder written
    before stems were hashed holds ``runs/bm25_message.trec``: that file is returned when the new
    one is missing and the old name was already a plain file name.
    """
    from convlab.systems.names import file_stem

    runs = folder / "runs"
    path = runs / f"{file_stem(name)}.trec"
    legacy = name.replace(":", "_")
    if not path.exists() and re.fullmatch(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*", legacy):
        old = runs / f"{legacy}.trec"
        if old.is_file():
            return old
    return path


def provenance_fields(command: Sequence[str]) -> dict[str, str | None]:
    """What ``config.json`` records of the command line that made a run folder.

    ``command`` (the line, quoted for a shell), ``commit`` and ``commit_state``
    (:func:`convlab.evaluation.provenance.source_commit`: the commit only when the tracked files
    are that commit's): what the docs' result pages name (``eval/pages.py``).
    """
    commit, state = source_commit()
    return {"command": shlex.join(command), "commit": commit, "commit_state": state}


def primary_metric(ev: Evaluation) -> str:
    """The metric a run is judged by first: the first of the headline (``recall@5`` by default)."""
    return ev.headline_metrics[0]


def metrics_record(ev: Evaluation) -> dict[str, Any]:
    """What ``metrics.json`` holds: lists of rows, JSON-ready (values are the frames' own)."""
    # maintain_order: each group's rows are summed in the frame's order, so the means are the
    # same to the last bit in every run (a parallel group-by sums them in any order)
    budgets = (
        ev.budgets.group_by("system", "budget", maintain_order=True)
        .agg(*[pl.col(c).mean() for c in BUDGET_MEANS])
        .sort("system", "budget")
    )
    record: dict[str, Any] = {
        "summary": ev.summary.to_dicts(),
        "by_category": ev.by_category.to_dicts(),
        "budgets": budgets.to_dicts(),
        "significance": ev.significance.to_dicts(),
        "category_significance": ev.category_significance.to_dicts(),
    }
    if ev.official is not None:  # only under LongMemEval's protocol
        record["official"] = {
            "summary": ev.official.summary.to_dicts(),
            "significance": ev.official.significance.to_dicts(),
        }
    return record


def _figures(ev: Evaluation) -> dict[str, Figure]:
    from convlab.evaluation import plots

    return {
        "recall_at_k.png": plots.recall_at_k(ev.summary),
        "coverage_by_budget.png": plots.coverage_by_budget(ev.budgets),
        "recall_by_category.png": plots.recall_by_category(ev.by_category),
        "unit_lengths.png": plots.unit_lengths(ev.units),
    }


def _save_figure(fig: Figure, path: Path) -> None:
    fig.savefig(path, dpi=110)


def _save_chosen(ev: Evaluation, out: Path) -> None:
    """Write ``systems.toml`` (every system as run) and ``systems.chosen.toml``.

    The second holds the cross-validated systems with the settings chosen on all of this run's
    queries, fixed: what to run on other data.
    """
    from convlab.systems.file import transfer_systems, write_systems
    from convlab.systems.system import System

    systems = [System.from_dict(s) for s in ev.config["systems"]]
    write_systems(systems, out / "systems.toml")
    chosen = transfer_systems(systems, ev.config.get("tuned", {}), ev.config["baseline"])
    if chosen:
        write_systems(chosen, out / "systems.chosen.toml")


def with_policy_significance(ev: Evaluation) -> Evaluation:
    """``ev`` with :attr:`Evaluation.policy_significance` filled when it has a grid but no tests.

    The reference cell is the run's baseline with ``unit``; the seed is the run's.
    """
    from convlab.evaluation.policy_grid import grid_significance

    if not ev.policy_budgets.height or ev.policy_significance.height:
        return ev
    seed = int(ev.config.get("config", {}).get("seed", 0))
    baseline = ev.config.get("baseline") or ev.systems[0]
    sig = grid_significance(ev.policy_budgets, baseline=baseline, seed=seed)
    return replace(ev, policy_significance=sig)


def save_grid(
    out: Path,
    policy_budgets: pl.DataFrame,
    significance: pl.DataFrame,
    *,
    baseline: str | None,
    systems: Sequence[str] | None = None,
) -> list[Path]:
    """Write the grid's files into ``out``, each whole or not at all; return their paths.

    ``policy_budgets.parquet``, ``policy_significance.parquet`` and ``policy_grid.png``, whose
    lines are ``systems`` (default: :func:`convlab.evaluation.policy_grid.plot_systems`).
    """
    import matplotlib.pyplot as plt

    from convlab.evaluation import plots
    from convlab.evaluation.policy_grid import grid_means, plot_systems

    paths = [out / "policy_budgets.parquet", out / "policy_significance.parquet"]
    write_file_atomic(paths[0], policy_budgets.write_parquet)
    write_file_atomic(paths[1], significance.write_parquet)
    chosen = systems if systems is not None else plot_systems(policy_budgets, baseline=baseline)
    fig = plots.policy_grid(grid_means(policy_budgets), systems=chosen)
    try:
        paths.append(out / "policy_grid.png")
        write_file_atomic(paths[-1], partial(_save_figure, fig))
    finally:
        plt.close(fig)
    return paths


def save_run(
    ev: Evaluation,
    out: Path,
    *,
    grid_systems: Sequence[str] | None = None,
    command: Sequence[str] = (),
) -> Path:
    """Write the run folder ``out`` (created when missing) and return its ``report.md``.

    ``grid_systems``: the systems drawn in ``policy_grid.png`` (default:
    :func:`convlab.evaluation.policy_grid.plot_systems`). ``command``: the command line that
    made the run; with it, ``config.json`` records ``command``, ``commit`` and ``commit_state``
    (:func:`convlab.evaluation.provenance.source_commit`: the commit only when the tracked
    files are that commit's), what the docs' result pages name (``eval/pages.py``).

    Example:
        >>> report = save_run(evaluate(data, systems, embedder=embedder), Path("runs/eval"))
        ... # doctest: +SKIP
    """
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    ev = with_policy_significance(ev)
    config = {**ev.config, "primary_metric": primary_metric(ev)}
    if command:
        config |= provenance_fields(command)
    write_text_atomic(out / "config.json", json.dumps(config, indent=1, default=str))
    frames = {
        "per_query.parquet": ev.per_query,
        "budgets.parquet": ev.budgets,
        "significance.parquet": ev.significance,
        "category_significance.parquet": ev.category_significance,
    }
    if ev.groups.height:  # every query's cross-validation group and fold
        frames["groups.parquet"] = ev.groups
    if ev.tuning.height:  # what each fold chose for the cross-validated systems
        frames["tuning.parquet"] = ev.tuning
    if ev.official is not None:  # LongMemEval's protocol: its own measures, means and tests
        frames["official_per_query.parquet"] = ev.official.per_question
        frames["official_summary.parquet"] = ev.official.summary
        frames["official_significance.parquet"] = ev.official.significance
        frames["official_questions.parquet"] = ev.official.questions
    for name, frame in frames.items():
        write_file_atomic(out / name, frame.write_parquet)
    metrics = json.dumps(metrics_record(ev), indent=1, default=str)
    write_text_atomic(out / "metrics.json", metrics)
    runs = out / "runs"
    runs.mkdir(exist_ok=True)
    for name, hits in ev.hits.items():
        path = run_path(out, name)
        write_run(hits, path, path.stem)  # the tag, like the file name, is the safe stem
    _save_chosen(ev, out)
    for name, fig in _figures(ev).items():
        write_file_atomic(out / name, partial(_save_figure, fig))
        plt.close(fig)
    if ev.policy_budgets.height:  # several resurrection policies: the system x policy grid
        baseline = ev.config.get("baseline")
        save_grid(
            out, ev.policy_budgets, ev.policy_significance, baseline=baseline, systems=grid_systems
        )
    return write_report(ev, out)
