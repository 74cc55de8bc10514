"""Does one data set's ordering of systems hold on another? The library of ``eval.orderings``.

    python -m eval.orderings --run locomo=RUN1 --run lme=RUN2 --metric recall@5 --out DIR

Takes each run folder's ``per_query`` frame (``per_query.parquet``, written by
``python -m eval.run``) and the systems every run has. For each pair of them, ordered so that
the first run's better system comes first, it gives each run's mean difference and its paired
randomization p-value (:func:`convlab.evaluation.significance.paired_randomization`, seeded),
Holm-corrected over all the pairs of that run (:func:`convlab.evaluation.significance.holm`),
and a verdict on the second run:

- ``holds``: the same sign, significant on both (p < 0.05 after Holm);
- ``flips``: the opposite sign, significant on both;
- ``same sign, n.s.`` / ``opposite sign, n.s.``: the later run's difference is not significant;
- ``n.s. first``: the first run's difference was not significant (no ordering to transfer).

:func:`write_orderings` writes ``orderings.json`` (every pair, every run) and ``orderings.md``
(the table); :func:`run` (an :class:`Orderings`) reads the run folders and writes them with the
study's ``config.json``, ``metrics.json``, ``pairs.parquet`` and ``report.md``
(:mod:`convlab.studies.contract`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import polars as pl

from convlab.atomic import write_text_atomic
from convlab.evaluation.significance import holm, paired_randomization
from convlab.studies.contract import STUDIES, Study, StudyResult, source_record, write_study

__all__ = [
    "ALPHA",
    "Orderings",
    "PairResult",
    "pair_results",
    "run",
    "table",
    "verdict",
    "write_orderings",
]

ALPHA = 0.05


@dataclass(frozen=True, slots=True, kw_only=True)
class Orderings:
    """Whether the first run's ordering of systems holds on the others (:func:`run`).

    Attributes:
        runs: ``(name, folder)`` of each ``eval.run`` folder, the first run first (two or more).
        metric: the measure compared.
        systems: only these systems (default: every shared one).
        seed: the randomization test's seed.
    """

    study: ClassVar[str] = "orderings"
    runs: tuple[tuple[str, Path], ...]
    metric: str = "recall@5"
    systems: tuple[str, ...] = ()
    seed: int = 0

    def __post_init__(self) -> None:
        if len(self.runs) < 2:
            raise ValueError("give at least two --run NAME=DIR")


@dataclass(frozen=True, slots=True)
class PairResult:
    """One pair of systems on one run: ``a`` is the first run's better system."""

    run: str
    a: str
    b: str
    delta: float
    p: float
    p_holm: float
    queries: int


def pair_results(
    runs: dict[str, pl.DataFrame],
    metric: str,
    *,
    systems: Sequence[str] = (),
    seed: int = 0,
) -> list[PairResult]:
    """Every pair of the systems all ``runs`` share, on each run (see the module docstring).

    Args:
        runs: run name -> its ``per_query`` frame (``system, query_id, metric, value``), the
            first run first.
        metric: the measure compared, e.g. ``recall@5``.
        systems: only these systems (default: every shared one); fewer pairs make Holm's
            correction less severe.
        seed: the randomization test's seed.

    Raises:
        ValueError: fewer than two shared systems, a named system some run lacks, or a run
            without ``metric``.
    """
    values: dict[str, dict[str, np.ndarray]] = {}
    for name, frame in runs.items():
        f = frame.filter(pl.col("metric") == metric)
        if f.is_empty():
            raise ValueError(f"run {name!r} has no {metric!r}")
        wide = f.pivot(on="system", index="query_id", values="value").sort("query_id")
        values[name] = {s: wide[s].to_numpy() for s in wide.columns if s != "query_id"}
    shared = sorted(set.intersection(*(set(v) for v in values.values())))
    if systems:
        missing = sorted(set(systems) - set(shared))
        if missing:
            raise ValueError(f"not in every run: {', '.join(missing)}")
        shared = sorted(set(systems))
    if len(shared) < 2:
        raise ValueError(f"the runs share {len(shared)} system(s): nothing to order")
    first = next(iter(values))
    means = {s: float(np.mean(values[first][s])) for s in shared}
    pairs = [
        (a, b) if means[a] >= means[b] else (b, a) for a, b in itertools.combinations(shared, 2)
    ]
    out: list[PairResult] = []
    for name, vals in values.items():
        deltas = [float(np.mean(vals[a] - vals[b])) for a, b in pairs]
        ps = [paired_randomization(vals[a], vals[b], seed=seed) for a, b in pairs]
        for (a, b), d, p, ph in zip(pairs, deltas, ps, holm(ps), strict=True):
            out.append(PairResult(name, a, b, d, p, ph, int(vals[a].size)))
    return out


def verdict(first: PairResult, later: PairResult) -> str:
    """How ``first``'s ordering fares on ``later`` (the same pair on another run)."""
    if first.p_holm >= ALPHA:
        return "n.s. first"
    same = (later.delta > 0) == (first.delta > 0) and later.delta != 0
    if later.p_holm >= ALPHA:
        return "same sign, n.s." if same else "opposite sign, n.s."
    return "holds" if same else "flips"


def table(results: Sequence[PairResult], runs: Sequence[str], metric: str) -> str:
    """The markdown table: one row per pair, sorted by the first run's difference."""
    by = {(r.run, r.a, r.b): r for r in results}
    first = [r for r in results if r.run == runs[0]]
    first.sort(key=lambda r: -r.delta)
    head = ["pair (first run's better first)"]
    for run in runs:
        head += [f"{run} Δ{metric}", f"{run} p (Holm)"]
    head += [f"on {run}" for run in runs[1:]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for f in first:
        row = [f"`{f.a}` > `{f.b}`"]
        for run in runs:
            r = by[(run, f.a, f.b)]
            row += [f"{r.delta:+.3f}", f"{r.p_holm:.3g}"]
        row += [verdict(f, by[(run, f.a, f.b)]) for run in runs[1:]]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def write_orderings(
    out: Path,
    results: Sequence[PairResult],
    runs: Mapping[str, Path],
    metric: str,
) -> Path:
    """Write ``orderings.json`` and ``orderings.md`` of ``results`` into ``out``.

    Args:
        out: the folder (made if missing).
        results: :func:`pair_results` of the runs.
        runs: run name -> its folder, the first run first.
        metric: the measure compared.

    Returns:
        The table's path, ``out/orderings.md``.
    """
    names = list(runs)
    out.mkdir(parents=True, exist_ok=True)
    by = {(r.run, r.a, r.b): r for r in results}
    verdicts = {
        f"{r.a} > {r.b}": {run: verdict(r, by[(run, r.a, r.b)]) for run in names[1:]}
        for r in results
        if r.run == names[0]
    }
    record = {
        "metric": metric,
        "systems": sorted({r.a for r in results} | {r.b for r in results}),
        "runs": {name: str(folder) for name, folder in runs.items()},
        "pairs": [asdict(r) for r in results],
        "verdicts": verdicts,
    }
    write_text_atomic(out / "orderings.json", json.dumps(record, indent=1) + "\n")
    write_text_atomic(out / "orderings.md", table(results, names, metric))
    return out / "orderings.md"


def run(config: Orderings, out: Path, *, command: Sequence[str] = ()) -> StudyResult:
    """The orderings of the run folders as a standard run folder (module doc).

    ``metrics.json``: the metric, the systems and each pair's verdicts; ``pairs.parquet``:
    every pair on every run (:class:`PairResult`).

    Raises:
        ValueError: a folder without ``per_query.parquet``, or what :func:`pair_results` raises.
    """
    frames: dict[str, pl.DataFrame] = {}
    for name, folder in config.runs:
        path = folder / "per_query.parquet"
        if not path.is_file():
            raise ValueError(f"{path}: no such file (a run folder of eval.run)")
        frames[name] = pl.read_parquet(path, glob=False)
    results = pair_results(frames, config.metric, systems=config.systems, seed=config.seed)
    runs = dict(config.runs)
    page = write_orderings(out, results, runs, config.metric)
    record = json.loads((out / "orderings.json").read_text(encoding="utf-8"))
    pairs = pl.DataFrame([asdict(r) for r in results])
    return write_study(
        out,
        config,
        metrics={k: record[k] for k in ("metric", "systems", "verdicts")},
        report=page.read_text(encoding="utf-8"),
        frames={"pairs": pairs},
        command=command,
        data=source_record(*runs.values()),
    )


STUDIES.add("orderings", Study("orderings", Orderings, run, "eval.orderings"))
