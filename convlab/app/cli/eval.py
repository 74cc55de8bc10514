"""``convlab eval``: the strategy comparison (:mod:`convlab.evaluation.compare`)."""

from __future__ import annotations

import argparse

from convlab.app.exits import EXIT_OK, UsageError

NAME = "eval"
EXAMPLE = "convlab eval --data data/sample --out runs/eval"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``eval`` with the comparison's own options to the subcommands ``sub``."""
    from convlab.evaluation.compare import add_arguments

    ev: argparse.ArgumentParser = sub.add_parser(
        NAME,
        help="run the strategy comparison (the same as python -m eval.run)",
        description="Evaluate every strategy (and the BM25 and hybrid systems) on labelled "
        "data and write a run folder: config.json, metrics.json, per-query parquet files, TREC "
        "runs, report.md and figures. --data is the bundled sample (default), a LoCoMo-family "
        "json or folder, a LongMemEval json, or a folder of pooled judgments.",
    )
    add_arguments(ev)
    return ev


def run(args: argparse.Namespace) -> int:
    """Run the comparison; bad strategies, policies or experiment files are usage errors."""
    from convlab.evaluation import compare

    try:
        systems = compare.systems_of(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    compare.run_comparison(args, systems)
    return EXIT_OK
