"""The lever table: ``python -m eval.levers eval/levers.toml --runs ROOT --out FILE``.

Reads the rows of ``eval/levers.toml`` (each: a lever, a data set, a run folder under ``ROOT``,
the system with the lever and the same system without it), pairs the two systems' held-out
per-query values of each run (:func:`convlab.studies.levers.lever_table`: delta, paired
randomization p, Holm over the whole table) and writes ``FILE`` (Markdown: the table, then each
run folder's command and commit from its ``config.json``) and ``FILE`` with ``.json`` (the rows),
and the study's run folder ``--folder`` (``config.json``, ``metrics.json``, ``levers.parquet``,
``report.md``: :func:`convlab.studies.levers.run`).
The table is never edited by hand: run this again.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from convlab.studies.levers import Levers, run

PROG = "python -m eval.levers"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("table", type=Path, help="the levers' TOML file (eval/levers.toml)")
    p.add_argument("--runs", type=Path, required=True, help="the folder the rows' runs are under")
    p.add_argument("--out", type=Path, required=True, help="the Markdown file to write")
    p.add_argument(
        "--folder",
        type=Path,
        default=Path("runs/levers"),
        help="the study's run folder (default: runs/levers)",
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    command = [*PROG.split(), *(sys.argv[1:] if argv is None else argv)]
    try:
        config = Levers(table=args.table, runs=args.runs)
        result = run(config, args.folder, command=command, page=args.out)
    except (OSError, ValueError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    print(f"{len(result.metrics['levers'])} levers -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
