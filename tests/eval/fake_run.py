"""A stand-in for a study in the registry's tests: ``python -m tests.eval.fake_run --out DIR``.

Writes the files a regression reads (``metrics.json``, ``config.json``, ``per_query.parquet``):
system ``x`` finds queries q1 and q2 (recall@5 1, 1, 0, 0: mean 0.5), its baseline ``b`` none;
``--fail`` exits 3 instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import polars as pl

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--fail", action="store_true")
    args = p.parse_args()
    if args.fail:
        sys.exit(3)
    args.out.mkdir(parents=True, exist_ok=True)
    summary = [{"system": "x", "metric": "recall@5", "mean": 0.5, "queries": 2}]
    (args.out / "metrics.json").write_text(json.dumps({"summary": summary}))
    config = {"config": {"headline": ["recall@5"]}, "commit": "f" * 40}
    (args.out / "config.json").write_text(json.dumps(config))
    pl.DataFrame(
        {
            "system": ["x"] * 4 + ["b"] * 4,
            "query_id": ["q1", "q2", "q3", "q4"] * 2,
            "category": ["c"] * 8,
            "metric": ["recall@5"] * 8,
            "value": [1.0, 1.0, 0.0, 0.0] + [0.0] * 4,
        }
    ).write_parquet(args.out / "per_query.parquet")
