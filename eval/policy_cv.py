"""The resurrection cell chosen by cross-validation: ``python -m eval.policy_cv``.

``python -m eval.policy_cv RUN_DIR [RUN_DIR...] --out DIR`` reads each folder's
``policy_budgets.parquet`` (from ``eval.run --resurrection ...`` or ``eval.resurrection_grid``)
and runs :func:`convlab.studies.policy_cv.policy_cv`: the (system, policy) cell chosen per
fold by grouped cross-validation at 256, 512 and 1,024 tokens, its held-out coverage and answer
containment, and CV@512 against ``message`` + ``unit`` at 1,024 tokens (paired randomization
test). Writes ``policy_cv.json`` and ``policy_cv.md`` into ``DIR``, and per run folder
``DIR/<its name>/per_query.parquet`` (:func:`convlab.studies.policy_cv.cv_per_query`, for
``eval.levers``) and ``groups.parquet`` (each query's group and fold at ``--budget``, named in
its ``config.json``), with the study's ``config.json``, ``metrics.json`` and ``report.md``
(:func:`convlab.studies.policy_cv_run.run`); the run folders are only read.
A folder without a grid is listed as such. Exit 0, 1 when no folder had a grid, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from convlab.studies.policy_cv import BUDGETS
from convlab.studies.policy_cv_run import PolicyCV, run

PROG = "python -m eval.policy_cv"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__)
    p.add_argument("runs", nargs="+", help="run folders holding policy_budgets.parquet")
    p.add_argument("--out", required=True, help="folder for policy_cv.json and policy_cv.md")
    p.add_argument(
        "--budgets", default=",".join(map(str, BUDGETS)), help="budgets reported (tokens)"
    )
    p.add_argument("--budget", type=int, default=512, help="the CV cell compared (tokens)")
    p.add_argument("--reference-budget", type=int, default=1024, help="the reference cell's budget")
    p.add_argument("--folds", type=int, default=10, help="most folds (fewer with fewer groups)")
    p.add_argument("--seed", type=int, default=0, help="seed of the tests")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; the exit code."""
    args = parse_args(argv)
    try:
        budgets = tuple(int(b) for b in args.budgets.split(",") if b)
    except ValueError:
        print(
            f"{PROG}: --budgets {args.budgets!r}: give integers, comma-separated", file=sys.stderr
        )
        return 2
    command = [*PROG.split(), *(sys.argv[1:] if argv is None else argv)]
    config = PolicyCV(
        runs=tuple(map(Path, args.runs)),
        budgets=budgets,
        budget=args.budget,
        reference_budget=args.reference_budget,
        folds=args.folds,
        seed=args.seed,
    )
    try:
        result = run(config, Path(args.out), command=command)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {result.out / 'policy_cv.md'}")
    return 0 if any("error" not in r for r in result.metrics["runs"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
