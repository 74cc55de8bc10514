"""A lever against the same system without it: ``python -m eval.lever_rows``.

    python -m eval.lever_rows RUN --pair "message+keys=unit=message" --metric recall@5 \
        --cv "message|message+keys=unit|message+keys=session" --groups conversation \
        --categories multi-hop,temporal,open-domain --out rows.json

Reads the run folder's ``per_query.parquet`` (``python -m eval.run``) and compares each lever
system with its baseline (``LEVER=BASELINE``: split at the last ``=`` whose right side is a
system of the run), by the paired randomization test, Holm-corrected over the pairs
(:func:`convlab.evaluation.levers.lever_rows`). ``--cv "BASELINE|A|B|..."`` adds the system
chosen among A, B, ... by grouped cross-validation (each fold the best on its training groups:
by conversation, or ``--groups query``), paired with BASELINE like any lever
(:func:`convlab.evaluation.levers.chosen_by_cv`); each fold's choice goes into the JSON.
Prints a Markdown table, writes JSON to ``--out``. Exit 0 when written, 2 for a missing run or
an unknown system.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from convlab.evaluation.levers import GROUPINGS, chosen_by_cv, lever_rows

PROG = "python -m eval.lever_rows"


def _pairs(texts: Sequence[str], systems: set[str]) -> list[tuple[str, str]]:
    """``LEVER=BASELINE`` texts as pairs; the baseline is the longest known system at the end."""
    out = []
    for text in texts:
        cuts = [i for i, ch in enumerate(text) if ch == "=" and text[i + 1 :] in systems]
        if not cuts:
            raise ValueError(f"--pair {text!r}: no '=BASELINE' naming a system of the run")
        out.append((text[: cuts[0]], text[cuts[0] + 1 :]))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """The comparison as a program: 0 when written, 2 for a missing run or unknown system."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__)
    p.add_argument("run", type=Path, help="an eval.run folder (per_query.parquet)")
    p.add_argument("--pair", action="append", default=[], metavar="LEVER=BASELINE")
    p.add_argument("--cv", action="append", default=[], metavar="BASELINE|A|B")
    p.add_argument("--groups", choices=GROUPINGS, default="conversation")
    p.add_argument("--folds", type=int, default=10)
    p.add_argument("--metric", default="recall@5")
    p.add_argument("--categories", default="", help="comma-separated categories")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    path = args.run / "per_query.parquet"
    if not path.is_file():
        print(f"{PROG}: {path}: no such file (a run folder of eval.run)", file=sys.stderr)
        return 2
    per_query = pl.read_parquet(path)
    categories = [c for c in args.categories.split(",") if c]
    if not args.pair and not args.cv:
        p.error("give --pair LEVER=BASELINE or --cv BASELINE|A|B")
    choices = {}
    try:
        pairs = _pairs(args.pair, set(per_query["system"].unique().to_list()))
        for text in args.cv:
            base, *candidates = text.split("|")
            if not candidates:
                raise ValueError(f"--cv {text!r}: give BASELINE|A|B...")
            held, folds = chosen_by_cv(
                per_query, candidates, args.metric, grouping=args.groups, folds=args.folds
            )
            name = held["system"][0]
            per_query = pl.concat([per_query, held])
            pairs.append((name, base))
            choices[name] = folds.to_dicts()
        rows = lever_rows(per_query, pairs, args.metric, categories=categories, seed=args.seed)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    record = {"run": str(args.run), "rows": rows.to_dicts(), "cv": choices}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1))
    for r in rows.iter_rows(named=True):
        print(
            f"| {r['lever']} | {r['baseline']} | {r['baseline_mean']:.3f} | "
            f"{r['lever_mean']:.3f} | {r['delta']:+.3f} | {r['holm_p']:.4f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
