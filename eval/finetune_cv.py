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
``folds/foldK/`` (each fold's runs and ``fold.json``) and ``config.json`` (command, recipe, model
ids, seconds). ``--all-model`` instead makes only the model trained on all the data (what
``eval.run --embedder minilm-ft`` runs unchanged elsewhere) and prints its id.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import polars as pl

from convlab.atomic import write_file_atomic
from convlab.embed.finetune import FineTuneRecipe
from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.queries import read_qrels, write_run
from convlab.evaluation.run_files import read_runs
from convlab.evaluation.runfolder import run_path
from convlab.paths import locomo_path
from convlab.studies.finetune_cv import FT_PREFIX, FineTuneCV, all_data_model, fold_runs
from convlab.studies.finetune_study import fixed_fusion, paired_family, scored

PROG = "python -m eval.finetune_cv"
BASE_FUSION = "fusion:convex"
WEIGHTS = "bm25:message=1,bm25:sequential=1,bm25:turn_pair=0.5,sequential=1,turn_pair=0.5"
"""The weights every fold of the base fusion chose without its test conversation (final24)."""
METRICS = ("recall@5", "recall@10", "ndcg@10")
VIEWS = ("message", "sequential", "turn_pair")


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


def _weights(spec: str) -> dict[str, float]:
    out = {}
    for part in spec.split(","):
        name, _, w = part.rpartition("=")
        out[name.strip()] = float(w)
    return out


def _compare(out: Path, base: Path, runs: dict[str, pl.DataFrame], weights: dict[str, float]):
    """Base runs + ft runs + fused, written; the paired family tested and written."""
    base_runs = read_runs(base)
    queries_done = set(runs[next(iter(runs))]["query_id"].unique().to_list())
    qrels = read_qrels(base / "qrels.txt")
    ft_weights = {
        (f"{FT_PREFIX}{n}" if f"{FT_PREFIX}{n}" in runs else n): w for n, w in weights.items()
    }
    all_runs = {**base_runs, **runs}
    all_runs["fusion:convex-ft"] = fixed_fusion(all_runs, ft_weights)
    all_runs["fusion:convex-fixed"] = fixed_fusion(all_runs, weights)
    per_q = pl.read_parquet(base / "per_query.parquet").select("query_id", "category").unique()
    queries = (
        qrels.filter(pl.col("relevance") > 0)
        .group_by("query_id", maintain_order=True)
        .agg(pl.col("doc_id").alias("relevant"))
        .filter(pl.col("query_id").is_in(list(queries_done)))
        .join(per_q, on="query_id", how="left")
    )
    values = scored(all_runs, queries, METRICS)
    views = [n.removeprefix(FT_PREFIX) for n in runs]
    pairs = [(f"{FT_PREFIX}{v}", v) for v in views if v in base_runs]
    pairs += [("fusion:convex-ft", BASE_FUSION), ("fusion:convex-ft", "bm25:message")]
    family = pl.concat(
        [
            paired_family(values, pairs, m, by_category=m == "recall@5").with_columns(
                pl.lit(m).alias("metric")
            )
            for m in METRICS
        ]
    )
    (out / "runs").mkdir(parents=True, exist_ok=True)
    for name, run in all_runs.items():
        write_run(run.with_columns(pl.col("rank").cast(pl.Int32)), run_path(out, name), name)
    shutil.copyfile(base / "qrels.txt", out / "qrels.txt")
    values.write_parquet(out / "per_query.parquet")
    family.write_parquet(out / "comparison.parquet")
    md = [
        "| metric | category | system | baseline | n | baseline | system | delta | Holm p |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in family.iter_rows(named=True):
        md.append(
            f"| {r['metric']} | {r['category']} | {r['system']} | {r['baseline']} | "
            f"{r['queries']} | {r['baseline_mean']:.3f} | {r['mean']:.3f} | {r['delta']:+.3f} | "
            f"{r['p_holm']:.4f} |"
        )
    (out / "comparison.md").write_text("\n".join(md) + "\n")
    return list(all_runs), family


def _write_config(
    args: argparse.Namespace,
    argv: Sequence[str] | None,
    recipe: FineTuneRecipe,
    weights: dict[str, float],
    names: list[str],
    records: list[dict[str, Any]],
    started: float,
) -> None:
    """``config.json``: the command, the recipe, the fixed weights, each fold's record, seconds."""
    config = {
        "command": [*shlex.split(PROG), *(sys.argv[1:] if argv is None else argv)],
        "data": str(args.data or locomo_path(None)),
        "folds": args.folds,
        "recipe": asdict(recipe),
        "weights_fixed": weights,
        "systems": [{"name": n} for n in names],
        "fold_records": records,
        "transfer": None if args.transfer is None else str(args.transfer),
        "base": None if args.base is None else str(args.base),
        "seconds": round(time.perf_counter() - started, 1),
    }
    text = json.dumps(config, indent=1, default=str)
    args.out.mkdir(parents=True, exist_ok=True)
    write_file_atomic(args.out / "config.json", lambda t: t.write_text(text))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the folds (or ``--all-model``); 2 for bad options or data."""
    args = parse_args(argv)
    started = time.perf_counter()
    try:
        recipe = FineTuneRecipe(
            epochs=args.epochs,
            batch_size=args.batch_size,
            learning_rate=args.lr,
            max_seq_length=args.max_seq_length,
            seed=args.seed,
            threads=args.threads,
        )
        weights = _weights(args.weights)
        data = None if args.transfer else load_labelled(locomo_path(args.data))
        only = tuple(int(x) for x in args.only_folds.split(",")) if args.only_folds else None
    except (ValueError, FileNotFoundError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    if args.transfer is not None:
        if args.base is None:
            print(f"{PROG}: --transfer needs --base (the base model's run folder)", file=sys.stderr)
            return 2
        try:
            ft = read_runs(args.transfer)
            runs = {f"{FT_PREFIX}{v}": ft[v] for v in VIEWS if v in ft}
            names, family = _compare(args.out, args.base, runs, weights)
        except (ValueError, FileNotFoundError) as exc:  # a run or a folder missing
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 2
        _write_config(args, argv, recipe, weights, names, [], started)
        print((args.out / "comparison.md").read_text())
        return 0
    assert data is not None  # loaded unless --transfer
    if args.all_model:
        model_id, stats = all_data_model(data, recipe, models=args.models, log=_log)
        print(json.dumps({"model_id": model_id, "training": stats}))
        return 0
    cv = FineTuneCV(
        out=args.out,
        cache=args.cache,
        models=args.models,
        folds=args.folds,
        recipe=recipe,
        only_folds=only,
    )
    runs, records = fold_runs(data, cv, log=_log)
    names, family = (
        ([], None) if args.base is None else _compare(args.out, args.base, runs, weights)
    )
    _write_config(args, argv, recipe, weights, names, records, started)
    if family is not None:
        print((args.out / "comparison.md").read_text())
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
