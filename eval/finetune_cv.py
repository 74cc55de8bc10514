"""Domain-adapted MiniLM by cross-validation: ``python -m eval.finetune_cv --out DIR --cache DIR``.

For each fold by conversation (``--folds``; 10 on LoCoMo is leave one conversation out), fine-tunes
all-MiniLM-L6-v2 with MultipleNegativesRankingLoss on the training conversations' (question,
evidence message unit, BM25 hard negative) triples, embeds only the held-out conversations' units
with it and searches their queries by each dense view (:mod:`convlab.studies.finetune_cv`).
The models are made into the models' cache (``--models``, default ``CONVLAB_CACHE`` or
``~/.cache/convlab``), never committed.

Writes a run folder the fusion study reads (``python -m eval.fuse_runs DIR --fixed ...``):
``runs/*.trec`` (the held-out ``ft:VIEW`` runs, the base run folder's runs of ``--base``, and the
fixed fusion ``fusion:convex-ft``: ``--weights`` over the base fusion's views with ``ft:`` views
for the dense ones, weights fixed in advance), ``qrels.txt``, ``comparison.parquet`` and
``comparison.md`` (paired randomization tests, Holm over the family, overall and per category),
``folds/foldK/`` (each fold's runs and ``fold.json``), ``groups.parquet`` (each scored query's
conversation and fold) and ``config.json`` (command, recipe, model ids, seconds, groups).
``--all-model`` instead makes only the model trained on all the data (what ``eval.run
--embedder minilm-ft`` runs unchanged elsewhere) and prints its id.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from convlab.embed.finetune import FineTuneRecipe
from convlab.evaluation.datasets import load_labelled
from convlab.paths import locomo_path
from convlab.studies.finetune_cv import FineTuneCV, all_data_model, run
from convlab.studies.fusion_study import parse_fixed

PROG = "python -m eval.finetune_cv"
WEIGHTS = "bm25:message=1,bm25:sequential=1,bm25:turn_pair=0.5,sequential=1,turn_pair=0.5"
"""The weights every fold of the base fusion chose without its test conversation (final24)."""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__)
    p.add_argument("--data", type=Path, default=None, help="LoCoMo json (default: shared)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--cache", type=Path, required=True, help="embedding cache folder")
    p.add_argument("--models", type=Path, default=None, help="fine-tuned models' cache root")
    p.add_argument("--base", type=Path, default=None, help="the base eval.run folder (runs)")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--only-folds", default=None, help="comma-separated fold indices")
    p.add_argument("--weights", default=WEIGHTS, help="the fixed fusion: RUN=W,... (base names)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-seq-length", type=int, default=128)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads while training")
    p.add_argument("--all-model", action="store_true", help="only the model of all the data")
    p.add_argument(
        "--transfer",
        type=Path,
        default=None,
        metavar="FT_RUN_FOLDER",
        help="no training: compare an eval.run folder made with --embedder minilm-ft (its dense "
        "views as ft:VIEW, and the fixed fusion over them) with the --base folder made with the "
        "base model, on --base's queries",
    )
    return p.parse_args(argv)


def _log(line: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {line}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the folds (or ``--transfer``, or ``--all-model``); 2 for bad options or data."""
    args = parse_args(argv)
    command = [*PROG.split(), *(sys.argv[1:] if argv is None else argv)]
    try:
        recipe = FineTuneRecipe(
            epochs=args.epochs,
            batch_size=args.batch_size,
            learning_rate=args.lr,
            max_seq_length=args.max_seq_length,
            seed=args.seed,
            threads=args.threads,
        )
        config = FineTuneCV(
            cache=args.cache,
            models=args.models,
            folds=args.folds,
            recipe=recipe,
            only_folds=tuple(int(x) for x in args.only_folds.split(","))
            if args.only_folds
            else None,
            data=args.data,
            base=args.base,
            weights=parse_fixed(args.weights),
            transfer=args.transfer,
        )
        if args.all_model:
            data = load_labelled(locomo_path(args.data))
            model_id, stats = all_data_model(data, recipe, models=args.models, log=_log)
            print(json.dumps({"model_id": model_id, "training": stats}))
            return 0
        result = run(config, args.out, command=command, log=_log)
    except (ValueError, FileNotFoundError) as exc:  # bad options, data, a run or folder missing
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    if config.base is not None:
        print((args.out / "comparison.md").read_text())
    print(f"wrote {result.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
