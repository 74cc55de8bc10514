"""What the ``convlab`` command prints: hit records, aligned hit lines, skip reports.

Functions of frames and records to lines of text; :mod:`convlab.app.cli` prints them, with the
terminal text helpers of :mod:`convlab.app.text` (widths, clipping, wrapping).
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import polars as pl

from convlab.app.text import clip, columns, pad, printable, short_path, wrapped
from convlab.highlight import excerpt, highlight, query_terms, term_spans

if TYPE_CHECKING:
    from convlab.store import IndexSummary
    from convlab.store.hits import FrameSource

__all__ = [
    "HitRecord",
    "MatchRecord",
    "color_wanted",
    "describe_hits",
    "hit_lines",
    "json_line",
    "skip_report",
    "sync_line",
    "with_skip_report",
]

SKIPPED_FILES_SHOWN = 5


def skip_report(skipped: Sequence[tuple[str, int, str]], *, verbose: bool) -> list[str]:
    """Lines naming the skipped files: every skip with ``verbose``, else a few files, shortened."""
    if not skipped:
        return ["skipped: 0"]
    by_file: dict[str, list[tuple[int, str]]] = {}
    for path, line, reason in skipped:
        by_file.setdefault(printable(str(path)), []).append((int(line or 0), printable(reason)))
    head = f"skipped: {len(skipped)} in {len(by_file)} file{'s' * (len(by_file) != 1)}"
    if verbose:
        return [head] + [
            f"  {path}:{line}: {reason}" if line else f"  {path}: {reason}"
            for path, items in by_file.items()
            for line, reason in items
        ]
    out = [head + " (--verbose lists each)"]
    for path, items in list(by_file.items())[:SKIPPED_FILES_SHOWN]:
        reasons: dict[str, int] = {}
        for _, r in items:  # by the reason's first words: "invalid JSON (detail ...)"
            stem = r.split(" (", 1)[0]
            reasons[stem] = reasons.get(stem, 0) + 1
        top = sorted(reasons.items(), key=lambda kv: -kv[1])
        if len(items) == 1:
            detail = items[0][1]
        else:
            detail = f"{len(items)} records (" + ", ".join(f"{r}: {n}" for r, n in top[:3])
            detail += ", …)" if len(top) > 3 else ")"
        out.append(f"  {short_path(path)}: {clip(detail, 100)}")
    if len(by_file) > SKIPPED_FILES_SHOWN:
        out.append(f"  … and {len(by_file) - SKIPPED_FILES_SHOWN} more files")
    return out


def sync_line(summary: IndexSummary, when: str) -> str:
    """One line of a ``convlab index --watch`` sync: when, files, conversations, texts, time.

    Example: ``2026-12-02 06:45:01 synced: 1 file read, 1 conversation changed, 3 texts
    embedded, 0 from cache, 1.2 s`` (conversations added or changed; removed and skipped
    ones are named when there are any).
    """

    def n(count: int, word: str) -> str:
        return f"{count} {word}{'s' * (count != 1)}"

    convs = summary.conversations_added + summary.conversations_changed
    removed = f", {summary.conversations_removed} removed" if summary.conversations_removed else ""
    skipped = f", {len(summary.skipped)} skipped" if summary.skipped else ""
    return (
        f"{when} synced: {n(summary.files_read, 'file')} read, "
        f"{n(convs, 'conversation')} changed{removed}, "
        f"{n(summary.texts_embedded, 'text')} embedded, {summary.texts_from_cache} from cache"
        f"{skipped}, {summary.seconds:.1f} s"
    )


def with_skip_report(lines: list[str], report: list[str]) -> list[str]:
    """The store's summary with its skip lines replaced by ``report`` (which names the files).

    The store's own skip lines are ``skipped records: N`` and the indented reason counts under
    it; a summary without them gets ``report`` at its end.
    """
    out: list[str] = []
    replaced = in_skips = False
    for line in lines:
        if line.startswith("skipped records:"):
            out += report
            replaced = in_skips = True
        elif not (in_skips and line.startswith("  ")):
            in_skips = False
            out.append(line)
    return out if replaced else out + report


class MatchRecord(TypedDict):
    """What matched: the best message of the hit's doc by the system's own scoring.

    (:func:`convlab.systems.match.with_matches`; its file and line are the record's
    ``source_path`` and ``source_line``.)
    """

    unit_id: str  # the unit that ranked that message best
    message_index: int
    role: str | None
    text: str  # the message as indexed (its chunks, in order)


class HitRecord(TypedDict):
    """One hit as people and scripts see it (a line of ``convlab search --json``)."""

    rank: int
    score: float
    score_kind: str | None  # what the score is: cosine, bm25, rrf, ... (SearchOptions.scoring)
    unit_id: str
    doc_id: str
    conversation_id: str
    title: str | None
    turn: int
    message_index: int  # the match's message
    role: str | None  # the match's
    timestamp: str | None  # ISO 8601: the hit's time, else its turn's start
    source_path: str | None  # the file of the match's message, as indexed
    source_line: int | None  # the match's line there
    question: str | None
    snippet: str
    match: MatchRecord
    # `search --budget`: what the hit brings back (convlab.app.cli.search.hit_contexts)
    context: NotRequired[dict[str, Any]]


def describe_hits(
    store: FrameSource,
    hits: pl.DataFrame,
    query: str | None = None,
    *,
    scoring: str | None = None,
) -> list[HitRecord]:
    """One record per hit: rank, score, unit, its match and where it is (file, line), its text.

    The one description of hits, shared by ``convlab search``, the MCP server and the search
    panel: title, the turn's question, time (the hit's, else its turn's start), a snippet of
    the hit's unit (:func:`clip` to 300 columns), and its match, the best message inside the
    doc by the system's own scoring (:func:`convlab.systems.match.with_matches`), with the
    file and line of that message (:func:`convlab.store.hits.placed`; hits the store's
    search returned are placed already).

    Args:
        store: the frames the hits were found in.
        hits: ranked hits (:data:`convlab.schema.HITS`, with their match).
        query: the query the hits answer (which message of a hit's unit matched).
        scoring: what the scores are (:func:`convlab.systems.search.system_scoring`), carried
            by every record as ``score_kind``.
    """
    from convlab.store.hits import PLACE_COLUMNS, placed

    h = hits if all(c in hits.columns for c in PLACE_COLUMNS) else placed(store, hits, query)
    out: list[HitRecord] = []
    for r in h.sort("rank").iter_rows(named=True):
        when = r.get("timestamp") or r.get("started_at")
        out.append(
            {
                "rank": r["rank"],
                "score": round(float(r["score"]), 4),
                "score_kind": scoring,
                "unit_id": r["unit_id"],
                "doc_id": r["doc_id"],
                "conversation_id": r["conversation_id"],
                "title": r.get("title"),
                "turn": r["turn_index"],
                "message_index": r["match_message_index"],
                "role": r.get("match_role"),
                "timestamp": when.isoformat() if when else None,
                "source_path": _opens(r.get("source_path")),
                "source_line": r.get("source_line"),
                "question": r.get("question"),
                "snippet": clip(r.get("text"), 300),
                "match": {
                    "unit_id": r["match_unit_id"],
                    "message_index": r["match_message_index"],
                    "role": r.get("match_role"),
                    "text": str(r.get("match_text") or ""),
                },
            }
        )
    return out


MATCH_LINES = 5
"""Lines of the matching message a hit shows (an excerpt around the query's terms)."""

QUESTION_LINES = 3
"""Lines of its turn's question a hit shows (an excerpt around the query's terms)."""

_BOLD, _PLAIN = "\x1b[1;31m", "\x1b[0m"


def color_wanted() -> bool:
    """Highlight with terminal colours: stdout is a terminal and ``NO_COLOR`` is not set."""
    import sys

    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _opens(stored: str | None) -> str | None:
    r"""A stored ``source_path`` as the path that opens (a name that is not UTF-8 included).

    The store holds such a name losslessly (:func:`convlab.paths.path_text`); the record gives
    it back as :func:`os.fsdecode` would, with surrogate escapes, which ``open`` accepts and
    JSON carries as ``\udcXX`` (:func:`json_line`).
    """
    from convlab.paths import text_path

    return None if stored is None else str(text_path(stored))


def json_line(record: Mapping[str, Any]) -> str:
    """One JSON line of ``record``: UTF-8 text as is, a file name's stray bytes as escapes."""
    import json

    line = json.dumps(record, ensure_ascii=False, default=str)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only ASCII escapes can carry it
        return json.dumps(record, default=str)
    return line


def hit_lines(
    rows: Sequence[HitRecord],
    width: int,
    *,
    query: str | None = None,
    color: bool = False,
    scoring: str | None = None,
) -> list[str]:
    """Hits for people: a header line per hit, then its question, match and place.

    The question (up to :data:`QUESTION_LINES` lines) and the match (the message the system
    ranks first inside the hit, up to :data:`MATCH_LINES` lines) are cut around the query's
    terms, which ``color`` highlights; with ``search --budget`` the context the hit brings back
    follows, whole. With ``scoring``, a last line says what the scores are (``scores: rrf
    (...)``): last, so ``convlab search ... | head -1`` still reads the first hit.
    """
    from convlab.retrieval.options import scoring_meaning

    terms = query_terms(query) if query else frozenset()
    rank_w = max(len(str(r["rank"])) for r in rows)
    indent = " " * (rank_w + 2)
    out = []
    for r in rows:
        when = (r["timestamp"] or "")[:16].replace("T", " ") or "undated"
        left = f"{r['rank']:>{rank_w}}. {r['score']:.3f}  "
        right = f"  {when}  turn {r['turn']}"
        room = max(8, width - len(left) - len(right))
        title = clip(printable(r["title"] or r["conversation_id"]), room)
        out.append(f"{left}{pad(title, room)}{right}")
        place = printable(r["source_path"] or r["conversation_id"])
        where = f":{r['source_line']}" if r["source_line"] else ""
        where += f" (message {r['message_index']})"
        room = width - len(indent) - 7  # what is left beside a label
        question = printable(r["question"] or "(no user text)")
        for i, line in enumerate(_excerpt_lines("", question, terms, room, color, QUESTION_LINES)):
            out.append(f"{indent}{'Q:' if i == 0 else '':<7}{line}")
        m = r.get("match") or {"role": r["role"], "text": r["snippet"]}
        prefix = f"[{m['role'] or 'turn'}] "
        for i, line in enumerate(
            _excerpt_lines(prefix, printable(m["text"]), terms, room, color, MATCH_LINES)
        ):
            out.append(f"{indent}{'match:' if i == 0 else '':<7}{line}")
        out.append(f"{indent}{'at:':<7}{short_path(place, room - len(where)) + where}")
        if "context" in r:
            out += _context_lines(r["context"], terms, width, indent, color)
    if scoring:
        first, *boosts = scoring.split("+")
        meaning = scoring_meaning(first)
        meaning += f"; boosted by {' and '.join(boosts)}" if boosts else ""
        out.append(clip(f"scores: {scoring}" + (f" ({meaning})" if meaning else ""), width))
    return out


def _excerpt_lines(
    prefix: str, text: str, terms: frozenset[str], room: int, color: bool, most: int
) -> list[str]:
    """``prefix`` and ``text`` cut around its terms to ``most`` lines of ``room`` columns."""
    room = max(8, room)
    text = " ".join(text.split())
    n = room * most - 2 * most - len(prefix)
    cut, _ = excerpt(text, term_spans(text, terms), max(8, n))
    lines = textwrap.wrap(prefix + cut, width=room, break_long_words=True, break_on_hyphens=False)
    lines = [clip(line, room) for line in lines[:most]] or [""]
    if not color:
        return lines
    return [highlight(line, term_spans(line, terms), _BOLD, _PLAIN) for line in lines]


def _context_lines(
    context: dict[str, Any], terms: frozenset[str], width: int, indent: str, color: bool
) -> list[str]:
    """The context a hit brings back (``search --budget``): a line of accounting, then pieces."""
    if context.get("skipped"):
        return [f"{indent}{'context:':<9}none (its first piece does not fit the budget left)"]
    head = f"{indent}{'context:':<9}{context['tokens']} tokens ({context['policy']} policy)"
    out = [head]
    if not context["pieces"]:
        out[-1] += ", all brought back by hits above"
    inner = indent + "  "
    for piece in context["pieces"]:
        when = (piece["timestamp"] or "")[:16].replace("T", " ")
        who = [f"turn {piece['turn']}", when, piece["speaker"] or piece["role"]]
        head = " · ".join(printable(str(w)) for w in who if w)
        place = printable(piece["source_path"] or piece["conversation_id"])
        line = f":{piece['source_line']}" if piece["source_line"] else ""
        room = width - len(inner) - columns(head) - 5 - len(line)
        out.append(f"{inner}[{head} · {short_path(place, max(20, room))}{line}]")
        for line in wrapped(inner, piece["text"], width):
            out.append(highlight(line, term_spans(line, terms), _BOLD, _PLAIN) if color else line)
    return out
