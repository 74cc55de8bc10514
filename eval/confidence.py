"""The search confidence, fitted and judged: ``python -m eval.confidence --out DIR``.

Searches every query of LoCoMo, the LongMemEval oracle and the real sessions with the default
system (:func:`convlab.studies.confidence_study.study_frame`), then:

- judges the confidence by grouped cross-validation over the three data sets pooled (each
  fold's model and threshold fitted on the other folds) and reports, per data set, AUROC
  (answerable against no-answer queries) and the default operating point: the share of
  answerable queries kept and of no-answer queries flagged;
- judges transfer: fitted on one data set, applied to each other;
- fits the shipped model on every query and writes it (``--model``, by default the package's
  ``convlab/systems/confidence.json``) with this command in it.

Writes ``DIR/features.parquet`` and ``DIR/features.command``, the command that searched (reused
by ``--features FILE``, which reads ``FILE``'s ``.command`` beside it: no search again),
``DIR/held_out.parquet``, ``DIR/groups.parquet`` (each query's group and fold),
``DIR/summary.json``, ``DIR/confidence.md`` and the page ``--page``
(``docs/site_src/results/confidence.md``), and the study's ``config.json``, ``metrics.json`` and
``report.md`` (:func:`convlab.studies.confidence_study.run`). Exit 0, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from convlab.studies.confidence_study import ConfidenceConfig, ConfidenceStudy, run
from convlab.systems.confidence import MODEL_FILE

PROG = "python -m eval.confidence"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__)
    p.add_argument(
        "--data",
        action="append",
        default=None,
        help="labelled data to search, repeatable (default: LoCoMo, the LongMemEval oracle and "
        "data/real_sessions from $CONVLAB_SHARED)",
    )
    p.add_argument("--out", type=Path, required=True, help="folder for the study's files")
    p.add_argument("--features", type=Path, default=None, help="a features.parquet to reuse")
    p.add_argument("--model", type=Path, default=MODEL_FILE, help="where the model goes")
    p.add_argument("--page", type=Path, default=None, help="the results page to write")
    p.add_argument("--cache", type=Path, default=Path("runs/cache"), help="embedding cache")
    p.add_argument("--backend", default="onnx-int8", help="the embedder's backend")
    p.add_argument("--embedder", default="minilm", help="the embedder (hash: tests)")
    p.add_argument(
        "--lme-every",
        type=int,
        default=1,
        metavar="N",
        help="LongMemEval: every abstention question and every N-th other one (%(default)s)",
    )
    p.add_argument(
        "--locomo-conversations",
        type=int,
        default=None,
        metavar="N",
        help="LoCoMo: its first N conversations (default: all)",
    )
    p.add_argument("--folds", type=int, default=5, help="folds of the grouped CV")
    p.add_argument("--keep", type=float, default=0.95, help="answerable share kept")
    p.add_argument("--c", type=float, default=1.0, help="inverse regularisation")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Fit and judge the confidence; write the model, the tables and the page."""
    args = parse_args(argv)
    command = [*PROG.split(), *(sys.argv[1:] if argv is None else argv)]
    try:
        config = ConfidenceStudy(
            fit=ConfidenceConfig(folds=args.folds, keep=args.keep, c=args.c),
            data=tuple(Path(d) for d in args.data or ()),
            features=args.features,
            model=args.model,
            page=args.page,
            cache=args.cache,
            backend=args.backend,
            embedder=args.embedder,
            lme_every=args.lme_every,
            locomo_conversations=args.locomo_conversations,
        )
        result = run(config, args.out, command=command)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    print(pl.DataFrame(result.metrics["held_out"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
