"""The terminal judging loop of ``convlab judge``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from convlab.highlight import highlight, prefix_spans
from convlab.judge.candidate import Candidate
from convlab.judge.qrels import GRADES, KEYS, JudgmentLog

__all__ = ["judge_loop", "render"]


def _mark(text: str, terms: Sequence[str], color: bool) -> str:
    on, off = ("\033[1;33m", "\033[0m") if color else ("[", "]")
    return highlight(text, prefix_spans(text, terms, whole=True), on, off)


def render(candidate: Candidate, *, color: bool = False, width: int = 1200) -> str:
    """A candidate as terminal text: the query, the doc, its context; query terms marked.

    Marked with ``[...]`` (or bold yellow when ``color``); the doc and each context chunk are cut
    to ``width`` characters.
    """

    def cut(t: str) -> str:
        t = " ".join(t.split())
        return t if len(t) <= width else t[: width - 1] + "…"

    c = candidate
    lines = [
        f"== {c.query_id} ({c.position} of {c.total}): {c.query}",
        f"-- doc {c.doc_id}",
        _mark(cut(c.text), c.terms, color),
    ]
    if c.context:
        lines.append("-- context (what its unit was embedded with; > the target)")
        for role, text, target in c.context:
            lines.append(f"{'>' if target else ' '} {role}: {_mark(cut(text), c.terms, color)}")
    return "\n".join(lines)


def _grade(grade: int | None) -> str:
    return next(name for name, g in GRADES.items() if g == grade)


def judge_loop(
    candidates: Sequence[Candidate],
    log: JudgmentLog,
    *,
    read: Any = input,
    write: Any = print,
    color: bool = False,
) -> int:
    """Ask for a judgment of each pending candidate; returns how many were recorded.

    Keys: r/p/n/s (or 1/2/3/0), ``q`` to stop; an unknown key asks again. End of input stops
    too: what was recorded is on disk, and running again resumes. Another session writing the
    same log is read before each candidate (what it judged is not asked again); a different
    grade it recorded for the candidate being judged is reported (the later grade counts).
    """
    pending = list(log.pending(candidates))
    done = len(candidates) - len(pending)
    recorded = elsewhere = 0
    for i, c in enumerate(pending, start=done + 1):
        log.refresh()
        if (c.query_id, c.doc_id) in log.judged():
            write(f"[{i} of {len(candidates)}] judged in another session")
            elsewhere += 1
            continue
        write(f"\n[{i} of {len(candidates)}]")
        write(render(c, color=color))
        while True:
            try:
                key = read("relevant r/1, partly p/2, not n/3, skip s/0, quit q > ").strip().lower()
            except EOFError:
                key = "q"
            if key == "q":
                write(f"stopped: {recorded} judged now, {len(pending) - recorded - elsewhere} left")
                return recorded
            if key in KEYS:
                conflicts = len(log.conflicts)
                log.record(c, key)
                recorded += 1
                for earlier, later in log.conflicts[conflicts:]:
                    write(
                        f"note: another session graded this {_grade(earlier.grade)} at "
                        f"{earlier.time}; yours ({_grade(later.grade)}) replaces it"
                    )
                break
            write(f"unknown key {key!r}")
    write(f"done: {recorded} judged now; all {len(candidates)} candidates judged")
    return recorded
