"""Fusion study over a run folder: ``python -m eval.fuse_runs RUN_FOLDER --out DIR``.

Scores every single run of an ``eval.run`` folder, reference fusions with fixed weights, and for
each combination of runs and each fusion method the weights chosen by grouped cross-validation
by conversation (held-out folds only), with paired tests against ``bm25:message``
(:func:`convlab.studies.fusion_study.study`): writes ``DIR/fusion.json``, ``DIR/fusion.md``,
``DIR/choices.parquet``, ``DIR/per_query.parquet`` and ``DIR/groups.parquet`` (each query's
conversation and fold), with the standard run folder's
``config.json``, ``metrics.json`` and ``report.md`` (:mod:`convlab.studies.contract`).
``--lexical-units LOCOMO_JSON`` first builds BM25 runs over other strategies' units.
``--fixed RUN=W,...`` scores one fusion with settings chosen elsewhere instead
(:func:`convlab.studies.fusion_study.fixed`): ``fixed.json`` and ``fixed.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from convlab.defaults import FOLDS
from convlab.studies.fusion_study import (
    FixedFusion,
    FusionStudy,
    Method,
    Reference,
    parse_fixed,
    run,
    run_fixed,
)
from convlab.systems.system import Tuning

PROG = "python -m eval.fuse_runs"
BASELINE = "bm25:message"
METHODS: tuple[Method, ...] = (
    ("rrf", "rrf", {}, {"k": [10, 60]}),
    ("convex(min-max)", "convex", {"norm": "min-max"}, {}),
    ("convex(z-score)", "convex", {"norm": "z-score"}, {}),
    ("combsum(min-max)", "combsum", {"norm": "min-max"}, {}),
    ("combmnz(min-max)", "combmnz", {"norm": "min-max"}, {}),
)
WEIGHTS = (0.0, 0.25, 0.5, 1.0)
"""Each non-baseline run's weight grid; the first run of a combination keeps weight 1."""
COMBOS = (
    ("bm25:message", "sequential", "turn_pair"),
    ("bm25:message", "sequential", "turn_pair", "whole_turn", "message"),
)
LEXICAL_COMBOS = (
    ("bm25:message", "bm25:sequential", "bm25:turn_pair", "sequential", "turn_pair"),
    ("bm25:message", "bm25:sequential", "bm25:turn_pair", "bm25:whole_turn"),
)
LEXICAL_STRATEGIES = ("message", "sequential", "turn_pair", "whole_turn")
# orientation figures: weights chosen by hand on these very queries (not CV)
REFERENCE_RUNS = ("bm25:message", "sequential", "turn_pair")
REFERENCES: tuple[Reference, ...] = (
    ("ref convex(min-max) bm25x2+seq+tp", "convex", (2.0, 1.0, 1.0), {"norm": "min-max"}),
    ("ref rrf equal bm25x2+seq+tp", "rrf", (2.0, 1.0, 1.0), {"k": 60}),
    ("ref rrf equal bm25+seq+tp", "rrf", (1.0, 1.0, 1.0), {"k": 60}),
)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__)
    p.add_argument("folder", type=Path, help="an eval.run folder (runs/*.trec, qrels.txt)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--folds", type=int, default=FOLDS, help="10 = leave one conversation out")
    p.add_argument("--samples", type=int, default=48, help="random settings per larger grid")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lexical-units", type=Path, default=None, help="LoCoMo json: BM25 over units")
    p.add_argument(
        "--fixed",
        default=None,
        metavar="RUN=W,...",
        help="no tuning: score this one fusion, settings chosen elsewhere (e.g. on LoCoMo), "
        "against bm25:message: 'bm25:message=1,bm25:sequential=1,sequential=1,turn_pair=0.5'",
    )
    p.add_argument("--method", default="convex", help="fusion method of --fixed (convex)")
    p.add_argument(
        "--baseline", default=BASELINE, help=f"the run --fixed is tested against ({BASELINE})"
    )
    p.add_argument("--norm", default="z-score", help="score normalisation of --fixed (z-score)")
    return p.parse_args(argv)


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the study (or ``--fixed``) and print where it wrote; 2 for a bad ``--fixed``."""
    args = parse_args(argv)
    command = [*PROG.split(), *(sys.argv[1:] if argv is None else argv)]
    if args.fixed is not None:
        try:
            config = FixedFusion(
                folder=args.folder,
                weights=parse_fixed(args.fixed),
                baseline=args.baseline,
                method=args.method,
                norm=args.norm,
                lexical_units=args.lexical_units,
                lexical_strategies=LEXICAL_STRATEGIES,
            )
            run_fixed(config, args.out, command=command)
        except ValueError as exc:
            print(exc, file=sys.stderr)
            return 2
        print(f"wrote {args.out}/fixed.json and fixed.md")
        return 0
    try:
        study_config = FusionStudy(
            folder=args.folder,
            baseline=BASELINE,
            methods=METHODS,
            tuning=Tuning(
                weights=WEIGHTS,
                samples=args.samples,
                metric="recall@5",
                folds=args.folds,
                seed=args.seed,
            ),
            combos=COMBOS,
            lexical_combos=LEXICAL_COMBOS,
            references=REFERENCES,
            reference_runs=REFERENCE_RUNS,
            lexical_strategies=LEXICAL_STRATEGIES,
            lexical_units=args.lexical_units,
        )
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    run(study_config, args.out, command=command, log=_log)
    print(f"wrote {args.out}/fusion.json, fusion.md and the run folder's report.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
