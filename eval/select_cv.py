"""A system chosen by CV among a run's systems: ``python -m eval.select_cv RUN --match GLOB ...``.

The candidates are the systems of the run folder ``RUN`` (``python -m eval.run``) whose names
match ``--match`` (shell-style, e.g. ``'bm25:message k1=*'``) or are listed by ``--candidates``;
each fold of a grouped cross-validation (conversations; LongMemEval questions) chooses the one
with the best mean ``--metric`` on its training queries, and the held-out queries take its values
(:func:`convlab.evaluation.select_cv.select_by_cv`). Writes ``OUT/per_query.parquet`` (the run's
systems and the chosen one as ``--name``, for ``eval.levers``), ``OUT/choices.parquet`` (each
fold's choice), ``OUT/groups.parquet`` (each query's group and fold), ``OUT/selection.md`` and
``OUT/config.json`` (the command, the commit and the groups).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from convlab.atomic import write_file_atomic
from convlab.evaluation import folds
from convlab.evaluation.provenance import source_commit
from convlab.evaluation.select_cv import select_by_cv

PROG = "python -m eval.select_cv"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path, help="an eval.run folder (per_query.parquet, qrels.txt)")
    p.add_argument("--match", help="candidates: the systems matching this pattern")
    p.add_argument("--candidates", help="candidates: comma-separated system names")
    p.add_argument("--name", required=True, help="the chosen system's name in the output")
    p.add_argument("--metric", default="recall@5", help="what each fold maximises (recall@5)")
    p.add_argument("--folds", type=int, default=folds.FOLDS, help=f"the most folds ({folds.FOLDS})")
    p.add_argument("--out", type=Path, required=True)
    return p.parse_args(argv)


def _candidates(args: argparse.Namespace, systems: list[str]) -> list[str]:
    if bool(args.match) == bool(args.candidates):
        raise ValueError("give --match or --candidates (one of them)")
    if args.candidates:
        names = [n.strip() for n in args.candidates.split(",") if n.strip()]
        unknown = [n for n in names if n not in systems]
        if unknown:
            raise ValueError(f"not systems of the run: {', '.join(unknown)}")
        return names
    return [s for s in systems if fnmatch.fnmatchcase(s, args.match)]


def _markdown(command: str, choices: pl.DataFrame, means: pl.DataFrame, metric: str) -> str:
    lines = [f"# Chosen by cross-validation: {metric}", "", f"`{command}`", "",
             "| fold | chosen | train mean | test mean | test queries | test groups |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for r in choices.iter_rows(named=True):
        lines.append(
            f"| {r['fold']} | `{r['system']}` | {r['train_mean']:.3f} | {r['test_mean']:.3f} "
            f"| {r['test_queries']} | {r['test_groups']} |"
        )
    lines += ["", f"| system | {metric} |", "|---|---|"]
    lines += [f"| `{s}` | {m:.3f} |" for s, m in means.iter_rows()]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    command = shlex.join([*PROG.split(), *(sys.argv[1:] if argv is None else argv)])
    try:
        path = args.run / "per_query.parquet"
        if not path.is_file():
            raise ValueError(f"{path}: no such file (is {args.run} an eval.run folder?)")
        pq = pl.read_parquet(path, glob=False)
        systems = pq["system"].unique(maintain_order=True).to_list()
        candidates = _candidates(args, systems)
        qrels, haystacks = folds.run_labels(args.run)
        held, choices = select_by_cv(
            pq,
            candidates,
            name=args.name,
            metric=args.metric,
            folds=args.folds,
            qrels=qrels,
            haystacks=haystacks,
        )
    except (OSError, ValueError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    both = pl.concat([pq, held], how="diagonal_relaxed")
    means = (
        both.filter(pl.col("metric") == args.metric)
        .group_by("system", maintain_order=True)
        .agg(pl.col("value").mean())
    )
    commit, state = source_commit()
    config = {"command": command, "commit": commit, "commit_state": state, "run": str(args.run),
              "candidates": candidates, "metric": args.metric, "folds": args.folds,
              "name": args.name}  # fmt: skip
    ids = held.filter(pl.col("metric") == args.metric)["query_id"].to_list()
    group = folds.groups(ids, qrels, haystacks=haystacks)
    frame = folds.fold_frame(ids, group, args.folds)
    config["groups"] = folds.save(args.out, frame, haystacks=haystacks)
    write_file_atomic(args.out / "per_query.parquet", lambda t: both.write_parquet(t))
    write_file_atomic(args.out / "choices.parquet", lambda t: choices.write_parquet(t))
    md = _markdown(command, choices, means, args.metric)
    write_file_atomic(args.out / "selection.md", lambda t: t.write_text(md, encoding="utf-8"))
    text = json.dumps(config, indent=1)
    write_file_atomic(args.out / "config.json", lambda t: t.write_text(text, encoding="utf-8"))
    print(md, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
