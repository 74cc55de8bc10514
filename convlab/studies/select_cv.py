"""One system chosen among candidates by grouped cross-validation, from per-query values.

A run folder scores every candidate (say BM25 under a grid of k1 and b) on every query. For each
fold of the grouped cross-validation (:mod:`convlab.evaluation.folds`: conversations; a
LongMemEval question is its own group), the candidate
with the best mean ``metric`` on the **training** queries is chosen (ties: the first candidate in
the given order), and the held-out queries get that candidate's values for every metric. The
held-out values, each query once, are a new system's per-query values (``name``): they can be
compared with any other system of the run by the paired tests, and the choices say what each
fold picked.

Example:
    >>> pq = pl.DataFrame({
    ...     "system": ["a"] * 4 + ["b"] * 4,
    ...     "query_id": ["c1:q0", "c1:q1", "c2:q0", "c2:q1"] * 2,
    ...     "metric": ["recall@5"] * 8,
    ...     "value": [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0]})
    >>> held, choices = select_by_cv(pq, ["a", "b"], name="cv", metric="recall@5", folds=2)
    >>> choices.select("test_groups", "system").rows()
    [('c2', 'a'), ('c1', 'b')]
    >>> held.filter(pl.col("metric") == "recall@5")["value"].to_list()
    [0.0, 0.0, 0.0, 0.0]
"""

from __future__ import annotations

import fnmatch
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import polars as pl

from convlab.atomic import write_text_atomic
from convlab.evaluation import folds as cv_folds
from convlab.studies.contract import STUDIES, Study, StudyResult, source_record, write_study

__all__ = ["SelectCV", "run", "select_by_cv"]


def _matrix(pq: pl.DataFrame, candidates: Sequence[str], ids: list[str]) -> np.ndarray:
    """(candidates x queries) of one metric.

    Raises:
        ValueError: a candidate that lacks a query or holds one twice.
    """
    out = np.empty((len(candidates), len(ids)))
    for c, name in enumerate(candidates):
        part = pq.filter(pl.col("system") == name)
        if part.height != len(ids) or part["query_id"].n_unique() != len(ids):
            raise ValueError(f"candidate {name!r} has {part.height} values for {len(ids)} queries")
        values = dict(zip(part["query_id"], part["value"], strict=True))
        out[c] = [values[q] for q in ids]
    return out


def select_by_cv(
    per_query: pl.DataFrame,
    candidates: Sequence[str],
    *,
    name: str,
    metric: str = "recall@5",
    folds: int = cv_folds.FOLDS,
    qrels: pl.DataFrame | None = None,
    haystacks: bool = False,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Each fold's choice among ``candidates`` and the held-out values under it.

    Args:
        per_query: ``system, query_id, metric, value`` (and ``category``), every candidate
            scored on the same queries.
        candidates: the systems to choose from, in tie-breaking order.
        name: the system name the held-out values are given.
        metric: what the choice maximises (on the training queries only).
        folds: the most folds (fewer when there are fewer groups).
        qrels: the run's qrels, grouping queries by their relevant docs' conversation where a
            query id does not name it (:func:`convlab.evaluation.folds.groups`).
        haystacks: each query has its own haystack (LongMemEval): each is its own group.

    Returns:
        ``held_out``: ``per_query``'s columns for ``name``, every metric of each query taken
        from its own fold's choice, in the order of the first candidate's queries;
        ``choices``: ``fold, system, train_mean, test_mean, test_queries, test_groups``.

    Raises:
        ValueError: fewer than two candidates, a candidate missing or incomplete, or fewer
            than two groups.
    """
    if len(set(candidates)) < 2:
        raise ValueError(f"choosing needs two or more candidates, not {list(candidates)}")
    if name in candidates or name in per_query["system"].unique().to_list():
        raise ValueError(f"the chosen system's name {name!r} is already a system of the run")
    at = per_query.filter(pl.col("metric") == metric)
    ids = at.filter(pl.col("system") == candidates[0])["query_id"].to_list()
    if not ids:
        raise ValueError(f"candidate {candidates[0]!r} has no {metric} values")
    values = _matrix(at, candidates, ids)
    group = cv_folds.groups(ids, qrels, haystacks=haystacks)
    splits = cv_folds.splits(group, folds)
    chosen: dict[str, str] = {}
    rows = []
    for fold, (train, test) in enumerate(splits):
        means = values[:, train].mean(axis=1)
        best = int(np.argmax(means))  # the first of equal maxima
        chosen.update((ids[i], candidates[best]) for i in test)
        rows.append(
            {
                "fold": fold,
                "system": candidates[best],
                "train_mean": float(means[best]),
                "test_mean": float(values[best, test].mean()),
                "test_queries": len(test),
                "test_groups": ",".join(sorted({group[i] for i in test})),
            }
        )
    pick = pl.DataFrame(
        {"query_id": ids, "system": [chosen[q] for q in ids], "_at": range(len(ids))}
    )
    held = (
        per_query.join(pick, on=["query_id", "system"], how="inner", maintain_order="left")
        .sort("_at", maintain_order=True)
        .drop("_at")
        .with_columns(pl.lit(name).alias("system"))
    )
    return held, pl.DataFrame(rows)


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectCV:
    """One system chosen by CV among a run folder's systems (:func:`run`).

    Attributes:
        run: an ``eval.run`` folder (``per_query.parquet``; ``qrels.txt`` when there).
        name: the chosen system's name in the output.
        match: candidates: the run's systems matching this shell-style pattern, or
        candidates: the candidates by name (give one of the two).
        metric: what each fold maximises.
        folds: the most folds.
    """

    study: ClassVar[str] = "select-cv"
    run: Path
    name: str
    match: str | None = None
    candidates: tuple[str, ...] = ()
    metric: str = "recall@5"
    folds: int = cv_folds.FOLDS

    def __post_init__(self) -> None:
        if bool(self.match) == bool(self.candidates):
            raise ValueError("give --match or --candidates (one of them)")


def _candidates(config: SelectCV, systems: list[str]) -> list[str]:
    if config.candidates:
        unknown = [n for n in config.candidates if n not in systems]
        if unknown:
            raise ValueError(f"not systems of the run: {', '.join(unknown)}")
        return list(config.candidates)
    return [s for s in systems if fnmatch.fnmatchcase(s, config.match or "")]


def _markdown(command: str, choices: pl.DataFrame, means: pl.DataFrame, metric: str) -> str:
    lines = [f"# Chosen by cross-validation: {metric}", "", f"`{command}`", "",
             "| fold | chosen | train mean | test mean | test queries | test groups |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for r in choices.iter_rows(named=True):
        lines.append(
            f"| {r['fold']} | `{r['system']}` | {r['train_mean']:.3f} | {r['test_mean']:.3f} "
            f"| {r['test_queries']} | {r['test_groups']} |"
        )
    lines += ["", f"| system | {metric} |", "|---|---|"]
    lines += [f"| `{s}` | {m:.3f} |" for s, m in means.iter_rows()]
    return "\n".join(lines) + "\n"


def run(config: SelectCV, out: Path, *, command: Sequence[str] = ()) -> StudyResult:
    """The selection as a standard run folder.

    ``per_query`` (the run's systems and the chosen one, for ``eval.levers``), ``choices``,
    ``selection.md`` (also ``report.md``), and the contract's ``config.json`` and
    ``metrics.json`` (each system's mean ``metric``).

    Raises:
        ValueError: no ``per_query.parquet`` in the run folder, or a candidate it lacks.
    """
    path = config.run / "per_query.parquet"
    if not path.is_file():
        raise ValueError(f"{path}: no such file (is {config.run} an eval.run folder?)")
    pq = pl.read_parquet(path, glob=False)
    candidates = _candidates(config, pq["system"].unique(maintain_order=True).to_list())
    qrels, haystacks = cv_folds.run_labels(config.run)
    held, choices = select_by_cv(
        pq,
        candidates,
        name=config.name,
        metric=config.metric,
        folds=config.folds,
        qrels=qrels,
        haystacks=haystacks,
    )
    both = pl.concat([pq, held], how="diagonal_relaxed")
    means = (
        both.filter(pl.col("metric") == config.metric)
        .group_by("system", maintain_order=True)
        .agg(pl.col("value").mean())
    )
    md = _markdown(shlex.join(command), choices, means, config.metric)
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "selection.md", md)
    ids = held.filter(pl.col("metric") == config.metric)["query_id"].to_list()
    group = cv_folds.groups(ids, qrels, haystacks=haystacks)
    groups = cv_folds.save(out, cv_folds.fold_frame(ids, group, config.folds), haystacks=haystacks)
    return write_study(
        out,
        config,
        metrics={"metric": config.metric, "means": dict(means.iter_rows())},
        report=md,
        frames={"per_query": both, "choices": choices},
        command=command,
        data=source_record(config.run),
        extra={"run": str(config.run), "candidates": candidates, "groups": groups},
    )


STUDIES.add("select-cv", Study("select-cv", SelectCV, run, "eval.select_cv"))
