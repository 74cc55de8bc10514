"""Is the answer on the screen? ``convlab search`` read by a person and by a script, compared.

For LoCoMo questions with a reference answer, runs ``convlab search QUESTION -k K`` against a
store of their conversation twice, once for people (the terminal output, ``COLUMNS`` wide) and
once with ``--json``, and counts the questions whose normalised answer (SQuAD normalisation,
:func:`convlab.resurrection.normalize_answer`) is in the normalised output. Extra arguments go
to both searches (``--budget 512 --policy window``).

Example::

    convlab index conv26.json --store /tmp/conv26
    python -m eval.answer_visible --store /tmp/conv26 --conversation conv-26 -n 50 -k 5
    python -m eval.answer_visible --store /tmp/conv26 -n 50 -k 5 --answerable -- --budget 512
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from convlab.app.cli.main import main as convlab
from convlab.paths import locomo_path
from convlab.resurrection import normalize_answer


def questions(
    locomo: Path, conversation: str, n: int, *, answerable: bool = False
) -> list[tuple[str, str]]:
    """The first ``n`` (question, answer) pairs of ``conversation`` that have an answer.

    With ``answerable``, only those whose normalised answer is in the conversation's
    normalised text: an answer no message says in those words cannot be on any screen.
    """
    data = json.loads(locomo.read_text())
    (sample,) = [s for s in data if s["sample_id"] == conversation]
    said = normalize_answer(
        " ".join(
            u["text"]
            for key, session in sample["conversation"].items()
            if key.startswith("session_") and isinstance(session, list)
            for u in session
        )
    )
    pairs = [(q["question"], str(q["answer"])) for q in sample["qa"] if "answer" in q]
    if answerable:
        pairs = [(q, a) for q, a in pairs if normalize_answer(a) in said]
    return pairs[:n]


def search_output(argv: Sequence[str]) -> str:
    """What ``convlab search`` prints for ``argv``."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        convlab(["search", *argv])
    return out.getvalue()


def visible(answer: str, output: str) -> bool:
    """The normalised answer is in the normalised output."""
    wanted = normalize_answer(answer)
    return bool(wanted) and wanted in normalize_answer(output)


def run(argv: Sequence[str] | None = None) -> dict[str, object]:
    """Count the answers visible in the human and the JSON output; returns the figures."""
    p = argparse.ArgumentParser(
        prog="python -m eval.answer_visible", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--store", required=True)
    p.add_argument("--locomo", type=Path, default=None, help="locomo10.json (default: found)")
    p.add_argument("--conversation", default="conv-26")
    p.add_argument("-n", type=int, default=50, help="questions with answers (%(default)s)")
    p.add_argument("-k", type=int, default=5)
    p.add_argument(
        "--answerable", action="store_true", help="only answers said verbatim in the dialog"
    )
    p.add_argument("--columns", type=int, default=100, help="terminal width (%(default)s)")
    p.add_argument("extra", nargs="*", help="more `convlab search` arguments, after --")
    args = p.parse_args(argv)
    os.environ["COLUMNS"] = str(args.columns)
    qs = questions(
        args.locomo or locomo_path(), args.conversation, args.n, answerable=args.answerable
    )
    human = machine = 0
    for question, answer in qs:
        base = [question, "--store", args.store, "-k", str(args.k), *args.extra]
        human += visible(answer, search_output(base))
        machine += visible(answer, search_output([*base, "--json"]))
    return {
        "conversation": args.conversation,
        "questions": len(qs),
        "answerable_only": args.answerable,
        "k": args.k,
        "extra": args.extra,
        "columns": args.columns,
        "human_visible": human,
        "json_visible": machine,
    }


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1:])))
