"""Fail when a system falls below its threshold: ``python -m eval.check_thresholds RUN --set NAME``.

Thresholds live in ``eval/thresholds.toml``: per set (``sample``, ``locomo2``), per system, the
minimum of each metric (means from ``metrics.json``, ``coverage@512`` among them).
They were set from measured runs minus a small margin, so a regression fails CI and noise does
not.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path


def measured(run: Path) -> dict[str, dict[str, float]]:
    m = json.loads((run / "metrics.json").read_text())
    out: dict[str, dict[str, float]] = {}
    for row in m["summary"]:
        out.setdefault(row["system"], {})[row["metric"]] = float(row["mean"])
    return out


def check(run: Path, thresholds: dict[str, dict[str, float]]) -> list[str]:
    got = measured(run)
    failures = []
    for system, mins in thresholds.items():
        if system not in got:
            failures.append(f"{system}: not in {run}")
            continue
        for metric, floor in mins.items():
            value = got[system].get(metric)
            if value is None or value < floor:
                failures.append(f"{system} {metric} = {value} < {floor}")
    return failures


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.check_thresholds", description=__doc__)
    p.add_argument("run", type=Path)
    p.add_argument("--set", required=True, dest="name")
    p.add_argument("--thresholds", type=Path, default=Path(__file__).with_name("thresholds.toml"))
    args = p.parse_args(argv)
    table = tomllib.loads(args.thresholds.read_text())
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
