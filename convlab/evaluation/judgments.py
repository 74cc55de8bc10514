"""The judgment log as the evaluation reads it: graded judgments, and qrels made of them.

A log (``qrels.jsonl``, written by :class:`convlab.judge.JudgmentLog`) holds one JSON line per
judgment: ``query_id, doc_id, grade, assessor, time``. The evaluation reads it here, below the
judging that writes it, so labelled data never imports the judge (whose pools run evaluations).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import polars as pl

from convlab.errors import LoadError
from convlab.files import TABLE, read_regular

__all__ = [
    "Judgment",
    "labels",
    "latest_grades",
    "parse_judgment",
    "parse_judgments",
    "read_judgments",
]

_FIELDS = ("query_id", "doc_id", "grade", "assessor", "time")


class Judgment(NamedTuple):
    """One line of a qrels file."""

    query_id: str
    doc_id: str
    grade: int | None  # None: skipped
    assessor: str
    time: str  # ISO 8601, UTC


def read_judgments(path: str | Path) -> tuple[list[Judgment], str | None]:
    """Read a qrels JSONL file: its judgments, and the torn last line if there is one.

    A last line without its newline that is not a whole record is the judgment that was being
    written when a session was killed: it is returned (to be reported), not read. A missing file
    holds no judgment; anything else that is not a regular file (a FIFO, a device) is refused.

    Raises:
        LoadError: naming file and line, for a bad record anywhere else, or a file that is not a
            regular file or is over :data:`convlab.files.TABLE`.
    """
    p = Path(path)
    if not os.path.lexists(p):
        return [], None
    raw = read_regular(p, limit=TABLE)
    lines = raw.split(b"\n")
    torn = None
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:
        last = lines[-1]
        try:
            parse_judgment(last.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            torn = last.decode("utf-8", errors="replace")
            lines.pop()
    return parse_judgments(p, lines, first=1), torn


def parse_judgments(path: Path, lines: Iterable[bytes], *, first: int) -> list[Judgment]:
    """The judgments of ``lines`` of ``path``, the first being line ``first`` (blanks left out).

    Raises:
        LoadError: naming file and line, for a line that is not a judgment.
    """
    out = []
    for number, line in enumerate(lines, start=first):
        if not line.strip():
            continue
        try:
            out.append(parse_judgment(line.decode("utf-8")))
        except (ValueError, UnicodeDecodeError) as exc:
            raise LoadError(path, number, f"bad judgment: {exc}") from None
    return out


def parse_judgment(line: str) -> Judgment:
    """One judgment line.

    Raises:
        ValueError: not an object with exactly the five fields, of their types.
    """
    rec = json.loads(line)
    if not isinstance(rec, dict) or set(rec) != set(_FIELDS):
        raise ValueError(f"expected an object with exactly {', '.join(_FIELDS)}")
    if not all(isinstance(rec[k], str) for k in ("query_id", "doc_id", "assessor", "time")):
        raise ValueError("query_id, doc_id, assessor and time are strings")
    if rec["grade"] not in (0, 1, 2, None) or isinstance(rec["grade"], bool):
        raise ValueError("grade is 0, 1, 2 or null (skipped)")
    return Judgment(*(rec[k] for k in _FIELDS))


def latest_grades(judgments: Iterable[Judgment]) -> dict[tuple[str, str, str], int | None]:
    """The last grade per (assessor, query, doc): a re-judgment replaces the earlier one."""
    out: dict[tuple[str, str, str], int | None] = {}
    for j in judgments:
        out[(j.assessor, j.query_id, j.doc_id)] = j.grade
    return out


def labels(judgments: Iterable[Judgment], *, min_grade: int = 1) -> pl.DataFrame:
    """Graded judgments as qrels: ``query_id, doc_id, grade, relevant`` (skips left out).

    With several assessors a doc's grade is the mean of theirs, rounded half up; it is
    relevant when that grade is at least ``min_grade`` (default: partly relevant counts).
    """
    if min_grade not in (1, 2):
        raise ValueError("min_grade is 1 (partly counts) or 2 (only relevant)")
    rows = [(q, d, g) for (_, q, d), g in latest_grades(judgments).items() if g is not None]
    frame = pl.DataFrame(
        rows, schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64}, orient="row"
    )
    return (
        frame.group_by("query_id", "doc_id", maintain_order=True)
        .agg((pl.col("grade").mean() + 0.5).floor().cast(pl.Int32).alias("grade"))
        .with_columns((pl.col("grade") >= min_grade).alias("relevant"))
        .sort("query_id", "doc_id")
    )
