"""Fail when a system falls below its threshold: ``python -m eval.check_thresholds RUN --set NAME``.

Thresholds live in ``eval/thresholds.toml``: per set (``sample``, ``locomo2``), per system, the
minimum of each metric (means from ``metrics.json``, ``coverage@512`` among them).
They were set from measured runs minus a small margin, so a regression fails CI and noise does
not. Exit 0 when all are met, 1 when not, 2 for no such set (:mod:`convlab.evaluation.thresholds`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from convlab.evaluation.thresholds import check, load_thresholds

THRESHOLDS = Path(__file__).with_name("thresholds.toml")


def main(argv: Sequence[str] | None = None) -> int:
    """Check a run folder against one set; 0 when all are met, 1 when not, 2 for no such set."""
    p = argparse.ArgumentParser(prog="python -m eval.check_thresholds", description=__doc__)
    p.add_argument("run", type=Path)
    p.add_argument("--set", required=True, dest="name")
    p.add_argument("--thresholds", type=Path, default=THRESHOLDS)
    args = p.parse_args(argv)
    table = load_thresholds(args.thresholds)
    if args.name not in table:
        print(f"no threshold set {args.name!r} in {args.thresholds}", file=sys.stderr)
        return 2
    failures = check(args.run, table[args.name])
    for f in failures:
        print(f"below threshold: {f}", file=sys.stderr)
    n = sum(len(v) for v in table[args.name].values())
    verdict = f"all {n} met" if not failures else f"{len(failures)} of {n} not met"
    print(f"thresholds {args.name}: {verdict}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
