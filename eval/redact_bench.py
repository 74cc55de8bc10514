"""Measure redaction on labelled corpora, real texts and code: ``python -m eval.redact_bench``.

Recall and false positives on the corpora of ``tests/fixtures/secrets`` (and, generated at run
time, one of every gitleaks rule and the trial corpora ``families`` and ``shapes``, with recall
per place: prompt, tool output, thinking), speed on real transcripts, and what the redactor
changes in real code (:mod:`convlab.studies.redact_bench`)::

    python -m eval.redact_bench --texts ../shared/transcripts data/sample --out runs/redact.json
    python -m eval.redact_bench --code .venv/lib/python3.11/site-packages  # false positives
    python -m eval.redact_bench --redactor detect-secrets  # needs `pip install detect-secrets`
    python -m eval.redact_bench --redactor detect-secrets-lines
    python -m eval.redact_bench --redactor file:/old/convlab/redact.py  # another version
    python -m eval.redact_bench --kingfisher /tmp/kf/kingfisher/bin/kingfisher  # trial corpora

The figures are printed (and saved with ``--out``) with the redactor's name and the exact inputs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from convlab.atomic import write_text_atomic
from convlab.studies.redact_bench import bench, kingfisher_scores

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "secrets"


def main(argv: Sequence[str] | None = None) -> int:
    """Print (and optionally save) the corpus scores and the throughput of one redactor."""
    ap = argparse.ArgumentParser(
        prog="python -m eval.redact_bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--redactor", default="convlab")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--texts", type=Path, nargs="*", default=[], help="transcripts for speed")
    ap.add_argument("--min-seconds", type=float, default=2.0)
    ap.add_argument("--code", type=Path, help="a tree of code to look for false positives in")
    ap.add_argument("--code-megabytes", type=float, default=40.0)
    ap.add_argument("--out", type=Path, help="write the figures as JSON here")
    ap.add_argument(
        "--kingfisher", type=Path, help="score this Kingfisher binary on the trial corpora instead"
    )
    args = ap.parse_args(argv)
    try:
        if args.kingfisher:
            if not args.kingfisher.is_file():
                raise ValueError(f"no Kingfisher binary at {args.kingfisher}")
            result = kingfisher_scores(args.kingfisher)
        else:
            result = bench(
                args.redactor,
                args.corpus,
                texts=args.texts,
                min_seconds=args.min_seconds,
                code=args.code,
                code_megabytes=args.code_megabytes,
            )
    except (ValueError, ImportError) as exc:
        print(f"python -m eval.redact_bench: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(args.out, text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
