"""A system chosen by CV among a run's systems: ``python -m eval.select_cv RUN --match GLOB ...``.

The candidates are the systems of the run folder ``RUN`` (``python -m eval.run``) whose names
match ``--match`` (shell-style, e.g. ``'bm25:message k1=*'``) or are listed by ``--candidates``;
each fold of a grouped cross-validation (conversations; LongMemEval questions) chooses the one
with the best mean ``--metric`` on its training queries, and the held-out queries take its values
(:func:`convlab.studies.select_cv.select_by_cv`). Writes ``OUT/per_query.parquet`` (the run's
systems and the chosen one as ``--name``, for ``eval.levers``), ``OUT/choices.parquet`` (each
fold's choice), ``OUT/selection.md`` and ``OUT/config.json`` (the command and the commit).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from convlab.studies.select_cv import SelectCV, run

PROG = "python -m eval.select_cv"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path, help="an eval.run folder (per_query.parquet, qrels.txt)")
    p.add_argument("--match", help="candidates: the systems matching this pattern")
    p.add_argument("--candidates", help="candidates: comma-separated system names")
    p.add_argument("--name", required=True, help="the chosen system's name in the output")
    p.add_argument("--metric", default="recall@5", help="what each fold maximises (recall@5)")
    p.add_argument("--folds", type=int, default=10, help="the most folds (10)")
    p.add_argument("--out", type=Path, required=True)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    command = [*PROG.split(), *(sys.argv[1:] if argv is None else argv)]
    names = tuple(n.strip() for n in (args.candidates or "").split(",") if n.strip())
    try:
        config = SelectCV(run=args.run, name=args.name, match=args.match, candidates=names,
                          metric=args.metric, folds=args.folds)  # fmt: skip
        result = run(config, args.out, command=command)
    except (OSError, ValueError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    print(result.report.read_text(encoding="utf-8"), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
