"""Does one data set's ordering of systems hold on another? ``python -m eval.orderings``.

    python -m eval.orderings --run locomo=RUN1 --run lme=RUN2 --metric recall@5 --out DIR

Reads each run folder's ``per_query.parquet`` (written by ``python -m eval.run``) and takes the
systems every run has. For each pair of them, ordered so that the first run's better system comes
first, it gives each run's mean difference and its paired randomization p-value, Holm-corrected
over all the pairs of that run, and a verdict on each later run (``holds``, ``flips``,
``same sign, n.s.``, ``opposite sign, n.s.``, ``n.s. first``):
:mod:`convlab.studies.orderings`. Writes ``orderings.json`` (every pair, every run) and
``orderings.md`` (the table) to ``--out``, with the study's ``config.json``, ``metrics.json``,
``pairs.parquet`` and ``report.md`` (:func:`convlab.studies.orderings.run`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from convlab.studies.orderings import Orderings, run

PROG = "python -m eval.orderings"


def _run_arg(text: str) -> tuple[str, Path]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=RUN_FOLDER")
    return name, Path(path)


def main(argv: Sequence[str] | None = None) -> int:
    """The comparison as a program: 0 when written, 2 for a missing or unreadable run."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__)
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
    command = [*PROG.split(), *(sys.argv[1:] if argv is None else argv)]
    try:
        config = Orderings(
            runs=tuple(args.run),
            metric=args.metric,
            systems=tuple(s for s in args.systems.split(",") if s),
            seed=args.seed,
        )
        result = run(config, args.out, command=command)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    print(result.out / "orderings.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
