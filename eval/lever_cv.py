"""A lever's held-out delta from a run folder: ``python -m eval.lever_cv RUN --lever BASE=LEVERS``.

Each ``--lever BASE=PATTERN`` names the system without the lever and the systems with it (a
shell-style pattern over the run's system names, or names joined by ``,``: one per setting;
one name for a setting fixed in advance). The setting is chosen per fold by grouped
cross-validation on the training queries only (conversations; each question on LongMemEval),
and the held-out values are compared with BASE's, paired over queries, with Holm's adjustment
over the levers of the call (:func:`convlab.evaluation.lever_cv.lever_cv`). Rows are also made
per category and, with ``--dated DATA``, on the queries that name a time
(:func:`convlab.retrieval.temporal.time_windows`); those are reported, not adjusted.
Writes ``lever_cv.json`` and ``lever_cv.md`` into ``--out``; the run folder is only read.
Exit 0, 2 on bad input.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from convlab.evaluation.lever_cv import holm_rows, lever_cv
from convlab.evaluation.queries import read_qrels

PROG = "python -m eval.lever_cv"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__)
    p.add_argument("run", help="a run folder (per_query.parquet, qrels.txt, config.json)")
    p.add_argument("--lever", action="append", required=True, help="BASE=PATTERN[,PATTERN...]")
    p.add_argument("--out", required=True, help="folder for lever_cv.json and lever_cv.md")
    p.add_argument("--metric", default="recall@5", help="what the choice maximises")
    p.add_argument("--folds", type=int, default=10, help="most folds (fewer with fewer groups)")
    p.add_argument("--dated", help="the run's data: add rows on the queries that name a time")
    p.add_argument("--seed", type=int, default=0, help="seed of the tests")
    return p.parse_args(argv)


def _settings(spec: str, systems: list[str]) -> tuple[str, list[str]]:
    """``BASE=PATTERN,...`` as the base system and the matching systems, in the run's order.

    Raises:
        ValueError: no ``=``, an unknown base, or a pattern that matches nothing.
    """
    base, sep, patterns = spec.partition("=")
    if not sep or base not in systems:
        raise ValueError(f"--lever {spec!r}: give BASE=PATTERN with BASE a system of the run")
    found: list[str] = []
    for pattern in patterns.split(","):
        hits = [s for s in systems if fnmatch.fnmatchcase(s, pattern) and s != base]
        if not hits:
            raise ValueError(f"--lever {spec!r}: {pattern!r} matches no system of the run")
        found += [s for s in hits if s not in found]
    return base, found


def _dated(path: str) -> list[str]:
    """The ids of the queries of ``path`` that name a time."""
    from convlab.evaluation.datasets import load_labelled
    from convlab.retrieval.temporal import time_windows

    queries = load_labelled(path).queries
    times = queries["time"].to_list() if "time" in queries.columns else [None] * queries.height
    texts = queries["text"].to_list()
    ids = queries["query_id"].to_list()
    return [q for q, t, a in zip(ids, texts, times, strict=True) if time_windows(t, a)]


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The rows: per lever, all queries (Holm over these), each category, the dated ones."""
    folder = Path(args.run)
    if not (folder / "per_query.parquet").is_file():
        raise ValueError(f"{folder}: no such run folder (no per_query.parquet)")
    per_query = pl.read_parquet(folder / "per_query.parquet")
    config = json.loads((folder / "config.json").read_text())
    lme = bool(config.get("data", {}).get("haystacks"))
    qrels = None if lme else read_qrels(folder / "qrels.txt")
    systems = per_query["system"].unique(maintain_order=True).to_list()
    categories = [c for c in per_query["category"].unique().sort().to_list() if c is not None]
    dated = _dated(args.dated) if args.dated else None
    main, extra = [], []
    for spec in args.lever:
        base, settings = _settings(spec, systems)
        common = {"metric": args.metric, "folds": args.folds, "qrels": qrels, "seed": args.seed}
        row, _ = lever_cv(per_query, base, settings, **common)
        main.append({"lever": spec, "subset": "all", **row})
        subsets = [(f"category={c}", _ids(per_query, base, c)) for c in categories]
        subsets += [("dated", dated)] if dated is not None else []
        for name, ids in subsets:
            part, _ = lever_cv(per_query, base, settings, subset=ids, **common)
            extra.append({"lever": spec, "subset": name, **part, "p_holm": None})
    return holm_rows(main) + extra


def _ids(per_query: pl.DataFrame, system: str, category: str) -> list[str]:
    part = per_query.filter((pl.col("system") == system) & (pl.col("category") == category))
    return part["query_id"].unique().to_list()


def _f(x: Any) -> str:
    return "" if x is None else f"{x:.4f}" if isinstance(x, float) else str(x)


def _markdown(rows: list[dict[str, Any]], run: str) -> str:
    cols = ["lever", "subset", "queries", "base", "with_lever", "delta", "p", "p_holm", "chosen"]
    lines = [f"# Held-out lever deltas: {run}", "", "| " + " | ".join(cols) + " |"]
    lines.append("|" + "---|" * len(cols))
    for r in rows:
        lines.append("| " + " | ".join(_f(r.get(c)) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit code."""
    args = parse_args(argv)
    try:
        rows = run(args)
    except (ValueError, FileNotFoundError, OSError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lever_cv.json").write_text(json.dumps(rows, indent=1))
    (out / "lever_cv.md").write_text(_markdown(rows, args.run))
    print(_markdown(rows, args.run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
