"""LongMemEval haystacks of any size from the oracle file: ``python -m eval.lme_haystacks``.

``python -m eval.lme_haystacks --oracle ../shared/datasets/longmemeval/longmemeval_oracle.json
--sessions 48 --seed 0 --out FILE`` writes a file in LongMemEval's format whose questions keep
their evidence sessions and get filler sessions (other questions' evidence, drawn seeded, never
gold) up to ``--sessions`` per question, sorted by date: LongMemEval's own construction, described
in :mod:`convlab.evaluation.lme_haystacks`. The file is written whole or not at all.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from convlab.evaluation.lme_haystacks import build_haystacks, read_questions, write_haystacks


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: exit 0 written, 2 a bad oracle file or option."""
    p = argparse.ArgumentParser(
        prog="python -m eval.lme_haystacks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--oracle", type=Path, required=True, help="longmemeval_oracle.json")
    p.add_argument("--sessions", type=int, default=48, help="sessions per question (default 48)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True, help="the file to write")
    args = p.parse_args(argv)
    prog = "eval.lme_haystacks"
    try:
        made = build_haystacks(read_questions(args.oracle), sessions=args.sessions, seed=args.seed)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        what = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
        print(f"{prog}: {args.oracle}: {what}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_haystacks(made, args.out)
    n = [len(q["haystack_session_ids"]) for q in made]
    print(f"{args.out}: {len(made)} questions, {sum(n)} sessions ({min(n)}-{max(n)} per question)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
