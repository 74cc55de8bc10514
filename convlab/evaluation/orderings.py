"""Does one data set's ordering of systems hold on another? ``python -m eval.orderings``.

    python -m eval.orderings --run locomo=RUN1 --run lme=RUN2 --metric recall@5 --out DIR

Reads each run folder's ``per_query.parquet`` (written by ``python -m eval.run``) and takes the
systems every run has. For each pair of them, ordered so that the first run's better system comes
first, it gives each run's mean difference and its paired randomization p-value
(:func:`convlab.evaluation.significance.paired_randomization`, seeded), Holm-corrected over all the
pairs of that run (:func:`convlab.evaluation.significance.holm`), and a verdict on the second run:

- ``holds``: the same sign, significant on both (p < 0.05 after Holm);
- ``flips``: the opposite sign, significant on both;
- ``same sign, n.s.`` / ``opposite sign, n.s.``: the later run's difference is not significant;
- ``n.s. first``: the first run's difference was not significant (no ordering to transfer).

Writes ``orderings.json`` (every pair, every run) and ``orderings.md`` (the table) to ``--out``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import polars as pl

from convlab.evaluation.significance import holm, paired_randomization

ALPHA = 0.05


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


def _run_arg(text: str) -> tuple[str, Path]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=RUN_FOLDER")
    return name, Path(path)


def main(argv: Sequence[str] | None = None) -> int:
    """The comparison as a program: 0 when written, 2 for a missing or unreadable run."""
    p = argparse.ArgumentParser(prog="python -m eval.orderings", description=__doc__)
    p.add_argument("--run", type=_run_arg, action="append", required=True, metavar="NAME=DIR")
    p.add_argument("--metric", default="recall@5")
    p.add_argument(
        "--systems", default="", help="comma-separated systems to pair (default: all shared)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    if len(args.run) < 2:
        p.error("give at least two --run NAME=DIR")
    runs: dict[str, pl.DataFrame] = {}
    for name, folder in args.run:
        path = folder / "per_query.parquet"
        if not path.is_file():
            print(
                f"python -m eval.orderings: {path}: no such file (a run folder of eval.run)",
                file=sys.stderr,
            )
            return 2
        runs[name] = pl.read_parquet(path)
    try:
        chosen = [s for s in args.systems.split(",") if s]
        results = pair_results(runs, args.metric, systems=chosen, seed=args.seed)
    except ValueError as exc:
        print(f"python -m eval.orderings: {exc}", file=sys.stderr)
        return 2
    names = list(runs)
    args.out.mkdir(parents=True, exist_ok=True)
    by = {(r.run, r.a, r.b): r for r in results}
    verdicts = {
        f"{r.a} > {r.b}": {run: verdict(r, by[(run, r.a, r.b)]) for run in names[1:]}
        for r in results
        if r.run == names[0]
    }
    record = {
        "metric": args.metric,
        "systems": sorted({r.a for r in results} | {r.b for r in results}),
        "runs": {name: str(folder) for name, folder in args.run},
        "pairs": [asdict(r) for r in results],
        "verdicts": verdicts,
    }
    (args.out / "orderings.json").write_text(json.dumps(record, indent=1) + "\n")
    (args.out / "orderings.md").write_text(table(results, names, args.metric))
    print(args.out / "orderings.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
