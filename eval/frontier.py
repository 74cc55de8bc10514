"""The frontier page from run folders: ``python -m eval.frontier --run DATA=RUN... --out PAGE``.

Each ``--run`` names a data set and the folder of its ``python -m eval.run`` (``per_query.parquet``
and ``config.json``, whose ``system_costs`` give each system's tokens embedded per token of text
and CPU-seconds). The page (default ``docs/site_src/results/frontier.md``) opens with the command
that generated it and, per run, the command and commit that made it (read as ``eval.pages``
reads them, or refused); then recall@5 and nDCG@10 of every system against today's default
(``--default``, the name the runs give it), paired randomization with Holm over the table, the
costs, a plot saved beside the page (``frontier.png``), and the default the measurement implies
(:func:`convlab.studies.frontier.choose_default`: a cheaper system replaces the default only
if its recall@5 is within ``--tolerance`` of the default's, or better, on every data set, and
every ``--require`` data set has a run). The study's run folder ``--folder`` (default
``runs/frontier``) holds the page as ``report.md``, the plot, ``frontier.parquet``,
``config.json`` and ``metrics.json`` (:func:`convlab.studies.frontier.run`).

Exit codes: 0 written; 2 a run folder that cannot be read or has no provenance (one line).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from convlab.studies.frontier import Frontier, run

PROG = "python -m eval.frontier"


def _run(spec: str) -> tuple[str, Path]:
    data, sep, path = spec.partition("=")
    if not sep or not data or not path:
        raise argparse.ArgumentTypeError(f"--run {spec!r}: write DATA=RUN_FOLDER")
    return data, Path(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__)
    p.add_argument("--run", type=_run, action="append", required=True, metavar="DATA=RUN")
    p.add_argument("--default", default=None, help="today's default system's name in the runs")
    p.add_argument("--tolerance", type=float, default=0.01)
    p.add_argument(
        "--require",
        action="append",
        default=[],
        metavar="DATA",
        help="a data set the rule needs (repeat): while one has no --run, the default stays",
    )
    p.add_argument("--out", type=Path, default=Path("docs/site_src/results/frontier.md"))
    p.add_argument(
        "--folder",
        type=Path,
        default=Path("runs/frontier"),
        help="the study's run folder (default: runs/frontier)",
    )
    args = p.parse_args(argv)
    command = [*PROG.split(), *(argv if argv is not None else sys.argv[1:])]
    config = Frontier(
        runs=tuple(args.run),
        default=args.default,
        tolerance=args.tolerance,
        require=tuple(args.require),
    )
    try:
        result = run(config, args.folder, command=command, page=args.out)
    except ValueError as e:  # a RunError too
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    print(f"{result.metrics['chosen']}: {result.metrics['why']}")
    print(f"wrote {args.out} and {args.out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
