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

The figures are printed (and saved with ``--out``) with the redactor's name and the exact inputs;
the study's run folder ``--folder`` (default ``runs/redact_bench``) holds them too
(``redact_bench.json``), with ``config.json``, ``metrics.json``, ``corpora.parquet`` and
``report.md`` (:func:`convlab.studies.redact_study.run`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from convlab.studies.redact_study import RedactBench, run

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "secrets"
PROG = "python -m eval.redact_bench"


def main(argv: Sequence[str] | None = None) -> int:
    """Print (and optionally save) the corpus scores and the throughput of one redactor."""
    ap = argparse.ArgumentParser(
        prog=PROG,
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
        "--folder",
        type=Path,
        default=Path("runs/redact_bench"),
        help="the study's run folder (default: runs/redact_bench)",
    )
    ap.add_argument(
        "--kingfisher", type=Path, help="score this Kingfisher binary on the trial corpora instead"
    )
    args = ap.parse_args(argv)
    command = [*PROG.split(), *(sys.argv[1:] if argv is None else argv)]
    config = RedactBench(
        corpus=args.corpus,
        redactor=args.redactor,
        texts=tuple(args.texts),
        min_seconds=args.min_seconds,
        code=args.code,
        code_megabytes=args.code_megabytes,
        kingfisher=args.kingfisher,
    )
    try:
        result = run(config, args.folder, command=command, figures=args.out)
    except (ValueError, ImportError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    print((result.out / "redact_bench.json").read_text(encoding="utf-8"), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
