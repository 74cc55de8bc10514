"""A stand-in for a study in the registry's tests: ``python -m tests.eval.fake_run --out DIR``.

Writes the two files a regression reads (``metrics.json``, ``config.json``) with recall@5 0.5
for system ``x``; ``--fail`` exits 3 instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

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
    (args.out / "config.json").write_text(json.dumps({"config": {"headline": ["recall@5"]}}))
