"""Fusion study over a run folder: ``python -m eval.fuse_runs RUN_FOLDER --out DIR``.

Scores every single run of an ``eval.run`` folder, reference fusions with fixed weights, and for
each combination of runs and each fusion method the weights chosen by grouped cross-validation
by conversation (held-out folds only), with paired tests against ``bm25:message``
(:func:`convlab.evaluation.fusion_study.study`): writes ``DIR/fusion.json``, ``DIR/fusion.md``,
``DIR/choices.parquet`` and ``DIR/per_query.parquet``. ``--lexical-units LOCOMO_JSON`` first
builds BM25 runs over other strategies' units. ``--fixed RUN=W,...`` scores one fusion with
settings chosen elsewhere instead (:func:`convlab.evaluation.fusion_study.fixed`): ``fixed.json``
and ``fixed.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from convlab.evaluation.fusion_study import FixedFusion, FusionStudy, fixed, parse_fixed, study

PROG = "python -m eval.fuse_runs"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__)
    p.add_argument("folder", type=Path, help="an eval.run folder (runs/*.trec, qrels.txt)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--folds", type=int, default=10, help="10 = leave one conversation out")
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
    p.add_argument("--norm", default="z-score", help="score normalisation of --fixed (z-score)")
    return p.parse_args(argv)


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the study (or ``--fixed``) and print where it wrote; 2 for a bad ``--fixed``."""
    args = parse_args(argv)
    if args.fixed is not None:
        try:
            config = FixedFusion(
                folder=args.folder,
                out=args.out,
                weights=parse_fixed(args.fixed),
                method=args.method,
                norm=args.norm,
                lexical_units=args.lexical_units,
            )
            fixed(config)
        except ValueError as exc:
            print(exc, file=sys.stderr)
            return 2
        print(f"wrote {args.out}/fixed.json and fixed.md")
        return 0
    try:
        study_config = FusionStudy(
            folder=args.folder,
            out=args.out,
            folds=args.folds,
            samples=args.samples,
            seed=args.seed,
            lexical_units=args.lexical_units,
        )
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    report = study(study_config, log=_log)
    print(f"wrote {args.out}/fusion.json and fusion.md in {report['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
