"""The system x policy grid of a saved run folder: ``python -m eval.resurrection_grid``.

``python -m eval.resurrection_grid RUN_FOLDER [--data DATA] --out DIR`` finds the per-query
grid (``policy_budgets``) of a run folder of ``eval.run``: read from the folder when it holds
one, re-run with ``--exact CACHE``, or rebuilt without a model from the TREC runs and the data
(:mod:`convlab.studies.resurrection_grid`, where the three ways are described). Writes
``grid.json``, ``grid.md``, ``policy_budgets.parquet``, ``policy_significance.parquet`` and
``policy_grid.png`` into ``DIR``, with the study's ``config.json``, ``metrics.json`` and
``report.md`` (:func:`convlab.studies.resurrection_grid.run`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from convlab.defaults import BUDGETS, GRID_SYSTEMS
from convlab.resurrection import POLICIES
from convlab.studies.resurrection_grid import GridStudy, run

PROG = "python -m eval.resurrection_grid"
DEFAULT_SYSTEMS = ",".join(GRID_SYSTEMS)
DEFAULT_BUDGETS = ",".join(map(str, BUDGETS))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__)
    p.add_argument("run", help="a run folder of python -m eval.run (config.json, runs/*.trec)")
    p.add_argument(
        "--data",
        default=None,
        help="the labelled data the run was made on (not needed when the folder holds "
        "policy_budgets.parquet)",
    )
    p.add_argument("--out", required=True, help="folder for grid.json, grid.md and the plot")
    p.add_argument(
        "--systems",
        default=None,
        help=f"systems of the grid (default: every system of a saved grid, else {DEFAULT_SYSTEMS})",
    )
    p.add_argument(
        "--policies",
        default=None,
        help="policies of the grid (default: every policy of a saved grid, else all: "
        f"{','.join(POLICIES.names())})",
    )
    p.add_argument(
        "--budgets",
        default=None,
        help=f"budgets (default: every budget of a saved grid, else {DEFAULT_BUDGETS})",
    )
    p.add_argument(
        "--baseline",
        default=None,
        help="system of the reference cell (with unit): the run's baseline when in the grid, "
        "else the first system",
    )
    p.add_argument(
        "--plot-systems",
        default=None,
        help="systems drawn in policy_grid.png (default: the baseline, message and the best 3 "
        "by coverage at 512)",
    )
    p.add_argument(
        "--exact",
        metavar="CACHE",
        default=None,
        help="re-run the systems (MiniLM through this embedding cache folder, BM25 without a "
        "model) to get their unit ids, instead of mapping ranked docs back to units",
    )
    return p.parse_args(argv)


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(s for s in (text or "").split(",") if s)


def _log(line: str) -> None:
    print(line, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Find the run's grid, test it and write it; 2 for a bad option or a missing input."""
    args = parse_args(argv)
    command = [*PROG.split(), *(sys.argv[1:] if argv is None else argv)]
    try:
        config = GridStudy(
            run=Path(args.run),
            data=args.data,
            systems=_names(args.systems),
            policies=_names(args.policies),
            budgets=tuple(int(b) for b in _names(args.budgets)),
            baseline=args.baseline,
            plot_systems=_names(args.plot_systems),
            exact=args.exact,
        )
        result = run(config, Path(args.out), command=command, log=_log)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    print(result.report.read_text(encoding="utf-8"), end="")
    if result.metrics["mapping"]:
        mapping = {
            "mapping": result.metrics["mapping"],
            "unit_policy_vs_saved_run": result.metrics["unit_policy_vs_saved_run"],
        }
        print(json.dumps(mapping, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
