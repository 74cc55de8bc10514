"""Is the answer on the screen? ``convlab search`` read by a person and by a script, compared.

For each answerable question, runs ``convlab search QUESTION -k K`` against a store twice, once
for people (the terminal output, ``COLUMNS`` wide) and once with ``--json``, and counts the
questions whose answer is in each output, and those whose answer is in one of the top ``K``
docs at all (the docs the JSON names, read whole from the store): the display can only show
what the search found.

- **LoCoMo** (``--locomo``, the default): questions with a reference answer; the answer is
  visible when its normalised text (SQuAD normalisation,
  :func:`convlab.resurrection.normalize_answer`) is in the normalised output, and in a doc when
  it is in the doc's normalised text. Each question searches its own conversation
  (``--conversation``, so one store may hold all ten).
- **Judged queries** (``--labelled DIR``, e.g. ``data/real_sessions``): queries with a doc
  judged relevant (grade >= ``--grade``); a message judged so is the answer, visible when
  :data:`WINDOW` of its consecutive normalised words are in the normalised output, and in a
  doc when the doc holds that message (a turn holds its messages).

Extra arguments go to both searches (``--budget 512 --policy window``).

Example::

    convlab index locomo10.json --store /tmp/locomo
    python -m eval.answer_visible --store /tmp/locomo --conversation all -n 30 -k 5 --answerable
    convlab index ../shared/transcripts/claude_code/spotter_real ... --store /tmp/real
    python -m eval.answer_visible --store /tmp/real --labelled data/real_sessions -k 5
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from convlab.app.cli.main import main as convlab
from convlab.paths import locomo_path
from convlab.resurrection import normalize_answer

WINDOW = 8
"""Consecutive words of a judged message that make it visible (all of a shorter message)."""


@dataclass(frozen=True, slots=True)
class Question:
    """A question, the conversation it searches (None: all) and how its answer is found."""

    text: str
    conversation: str | None
    answers: tuple[str, ...]  # LoCoMo: the answer; judged: the relevant messages' texts
    messages: tuple[str, ...] = ()  # judged: the relevant message ids


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


def locomo_questions(
    locomo: Path, conversations: list[str], n: int, *, answerable: bool
) -> list[Question]:
    """LoCoMo's questions of each conversation (``n`` each)."""
    if conversations == ["all"]:
        conversations = [s["sample_id"] for s in json.loads(locomo.read_text())]
    return [
        Question(q, conv, (a,))
        for conv in conversations
        for q, a in questions(locomo, conv, n, answerable=answerable)
    ]


def judged_questions(folder: Path, texts: dict[str, str], grade: int, n: int) -> list[Question]:
    """The queries of ``folder`` with a message judged at ``grade`` or more that has text."""
    relevant: dict[str, list[str]] = {}
    for line in (folder / "qrels.jsonl").read_text().splitlines():
        j = json.loads(line)
        if j["grade"] >= grade and j["doc_id"] in texts:
            relevant.setdefault(j["query_id"], []).append(j["doc_id"])
    out = []
    for line in (folder / "queries.jsonl").read_text().splitlines():
        q = json.loads(line)
        docs = tuple(dict.fromkeys(relevant.get(q["query_id"], ())))
        if docs:
            out.append(
                Question(q["text"], q["conversation_id"], tuple(texts[d] for d in docs), docs)
            )
    return out[:n]


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


def message_visible(message: str, output: str) -> bool:
    """:data:`WINDOW` consecutive normalised words of ``message`` (all, if fewer) are shown.

    Spaces are left out on both sides, so a word the terminal wrapped over two lines (a path, a
    command) still counts as shown.
    """
    words = normalize_answer(message).split()
    shown = "".join(normalize_answer(output).split())
    if len(words) <= WINDOW:
        return bool(words) and "".join(words) in shown
    return any("".join(words[i : i + WINDOW]) in shown for i in range(len(words) - WINDOW + 1))


def _frames(store: str) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """From the store's chunks: each doc's text, each message's text, each message's turn id."""
    import polars as pl

    from convlab import open_store, schema

    chunks = open_store(store).frame("chunks").sort("position")
    msg = chunks.with_columns(schema.message_id_expr().alias("m"), schema.turn_id_expr().alias("t"))
    by_msg = msg.group_by("m", maintain_order=True).agg(pl.col("text").str.join(" "), pl.first("t"))
    by_turn = msg.group_by("t").agg(pl.col("text").str.join(" "))
    docs = dict(by_turn.iter_rows()) | dict(by_msg.select("m", "text").iter_rows())
    texts = dict(by_msg.select("m", "text").iter_rows())
    return docs, texts, dict(by_msg.select("m", "t").iter_rows())


class Searches:
    """``convlab search``'s two outputs for a question, from one warm store.

    The command's own steps (:mod:`convlab.app.cli.search`): the store's system searched with
    the question's filters, :func:`~convlab.app.display.describe_hits`, then
    :func:`~convlab.app.display.hit_lines` for people and :func:`~convlab.app.display.json_line`
    for scripts; the store and its views are loaded once, as a warm server holds them. With
    extra arguments (``--budget``), each output is the command's, run in this process.
    """

    def __init__(self, store: str, k: int, columns: int, extra: Sequence[str]) -> None:
        from convlab import open_store

        self.path, self.k, self.columns, self.extra = store, k, columns, list(extra)
        self.store = open_store(store)

    def outputs(self, question: str, conversation: str | None) -> tuple[str, str]:
        """The terminal output and the JSON lines of ``question``."""
        if self.extra:
            base = [question, "--store", self.path, "-k", str(self.k), *self.extra]
            base += ["--conversation", conversation] if conversation else []
            return search_output(base), search_output([*base, "--json"])
        from convlab.app.display import describe_hits, hit_lines, json_line
        from convlab.retrieval import Filters, SearchOptions
        from convlab.systems.search import system_scoring

        scope = Filters(conversations=(conversation,) if conversation else None)
        options = SearchOptions(k=self.k, filters=scope)
        hits = self.store.search(question, k=self.k, options=options)
        if hits.height == 0:
            return "", ""
        scoring = system_scoring(self.store.system(), options)
        rows = describe_hits(self.store, hits, query=question, scoring=scoring)
        shown = hit_lines(rows, self.columns, query=question, scoring=scoring)
        return "\n".join(shown), "\n".join(json_line(r) for r in rows)


def run(argv: Sequence[str] | None = None) -> dict[str, object]:
    """Count the answers visible in the human and the JSON output; returns the figures."""
    p = argparse.ArgumentParser(
        prog="python -m eval.answer_visible", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--store", required=True)
    p.add_argument("--locomo", type=Path, default=None, help="locomo10.json (default: found)")
    p.add_argument("--labelled", type=Path, default=None, help="a folder of judged queries")
    p.add_argument("--grade", type=int, default=2, help="judged relevant at (%(default)s)")
    p.add_argument(
        "--conversation", action="append", help="LoCoMo conversation(s), or all (conv-26)"
    )
    p.add_argument("-n", type=int, default=50, help="questions (per conversation) (%(default)s)")
    p.add_argument("-k", type=int, default=5)
    p.add_argument(
        "--answerable", action="store_true", help="only answers said verbatim in the dialog"
    )
    p.add_argument("--columns", type=int, default=100, help="terminal width (%(default)s)")
    p.add_argument("extra", nargs="*", help="more `convlab search` arguments, after --")
    args = p.parse_args(argv)
    os.environ["COLUMNS"] = str(args.columns)
    docs, texts, turn_of = _frames(args.store)
    if args.labelled is not None:
        qs = judged_questions(args.labelled, texts, args.grade, args.n)
    else:
        convs = args.conversation or ["conv-26"]
        qs = locomo_questions(
            args.locomo or locomo_path(), convs, args.n, answerable=args.answerable
        )
    human = machine = in_doc = human_in_doc = 0
    searches = Searches(args.store, args.k, args.columns, args.extra)
    for q in qs:
        shown, listed = searches.outputs(q.text, q.conversation)
        found = [json.loads(line)["doc_id"] for line in listed.splitlines() if line.strip()]
        if q.messages:
            seen = any(message_visible(a, shown) for a in q.answers)
            machine += any(message_visible(a, listed) for a in q.answers)
            held = any(m in found or turn_of.get(m) in found for m in q.messages)
        else:
            seen = visible(q.answers[0], shown)
            machine += visible(q.answers[0], listed)
            held = any(visible(q.answers[0], docs.get(d, "")) for d in found)
        human += seen
        in_doc += held
        human_in_doc += seen and held
    return {
        "data": str(args.labelled or "locomo"),
        "conversations": sorted({q.conversation or "all" for q in qs}),
        "questions": len(qs),
        "answerable_only": args.answerable,
        "k": args.k,
        "extra": args.extra,
        "columns": args.columns,
        "answer_in_top_k_doc": in_doc,
        "human_visible": human,
        "json_visible": machine,
        "human_visible_of_in_doc": human_in_doc,
        "human_share_of_in_doc": round(human_in_doc / in_doc, 3) if in_doc else None,
    }


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1:])))
