"""The qrels log: graded judgments appended one fsynced line at a time; labels and agreement."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import polars as pl

from convlab.judge.pool import Candidate
from convlab.loaders.errors import LoadError

__all__ = [
    "GRADES",
    "KEYS",
    "Agreement",
    "Judgment",
    "JudgmentLog",
    "agreement",
    "labels",
    "read_judgments",
]

GRADES: dict[str, int | None] = {"relevant": 2, "partly": 1, "not": 0, "skip": None}
"""The judgments an assessor can make and their grades (``skip`` records no grade)."""

KEYS: dict[str, str] = {
    "r": "relevant",
    "p": "partly",
    "n": "not",
    "s": "skip",
    "1": "relevant",
    "2": "partly",
    "3": "not",
    "0": "skip",
}
"""Keyboard shortcuts: r/p/n/s or 1/2/3/0."""

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
    written when a session was killed: it is returned (to be reported), not read.

    Raises:
        LoadError: naming file and line, for a bad record anywhere else.
    """
    p = Path(path)
    if not p.exists():
        return [], None
    raw = p.read_bytes()
    lines = raw.split(b"\n")
    torn = None
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:
        last = lines[-1]
        try:
            _parse(last.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            torn = last.decode("utf-8", errors="replace")
            lines.pop()
    out = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append(_parse(line.decode("utf-8")))
        except (ValueError, UnicodeDecodeError) as exc:
            raise LoadError(p, number, f"bad judgment: {exc}") from None
    return out, torn


def _parse(line: str) -> Judgment:
    rec = json.loads(line)
    if not isinstance(rec, dict) or set(rec) != set(_FIELDS):
        raise ValueError(f"expected an object with exactly {', '.join(_FIELDS)}")
    if not all(isinstance(rec[k], str) for k in ("query_id", "doc_id", "assessor", "time")):
        raise ValueError("query_id, doc_id, assessor and time are strings")
    if rec["grade"] not in (0, 1, 2, None) or isinstance(rec["grade"], bool):
        raise ValueError("grade is 0, 1, 2 or null (skipped)")
    return Judgment(*(rec[k] for k in _FIELDS))


@dataclass
class JudgmentLog:
    """An assessor's append-only qrels file (state: the open file and what is judged).

    Opening it reads what is there (a torn last line is cut off and kept in ``torn``, with a
    warning); :meth:`record` appends one judgment, flushed and fsynced.

    Args:
        path: the qrels JSONL file (created when missing).
        assessor: whose judgments are recorded; resuming skips only theirs.
    """

    path: Path
    assessor: str
    judgments: list[Judgment] = field(init=False)
    torn: str | None = field(init=False)

    def __init__(self, path: str | Path, *, assessor: str) -> None:
        if not assessor.strip():
            raise ValueError("the assessor needs a name")
        self.path = Path(path)
        self.assessor = assessor
        self.judgments, self.torn = read_judgments(self.path)
        if self.torn is not None:
            warnings.warn(
                f"{self.path}: the last line was torn (a session killed mid-write) and is "
                f"dropped: {self.torn[:80]!r}",
                stacklevel=2,
            )
            self._cut_torn()
        elif self.path.exists() and self.path.stat().st_size:
            with self.path.open("rb") as fh:
                fh.seek(-1, os.SEEK_END)
                whole = fh.read(1) == b"\n"
            if not whole:  # a whole last record without its newline: end the line first
                with self.path.open("ab") as fh:
                    fh.write(b"\n")
                    fh.flush()
                    os.fsync(fh.fileno())

    def _cut_torn(self) -> None:
        """Truncate the file after its last newline (the torn line is the lost judgment)."""
        data = self.path.read_bytes()
        keep = data.rfind(b"\n") + 1
        with self.path.open("r+b") as fh:
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())

    def judged(self) -> set[tuple[str, str]]:
        """(query_id, doc_id) this assessor has judged or skipped."""
        return {(j.query_id, j.doc_id) for j in self.judgments if j.assessor == self.assessor}

    def pending(self, candidates: Iterable[Candidate]) -> Iterator[Candidate]:
        """The candidates this assessor has not judged yet, in order."""
        done = self.judged()
        for c in candidates:
            if (c.query_id, c.doc_id) not in done:
                yield c

    def record(
        self, candidate: Candidate, judgment: str, *, now: datetime | None = None
    ) -> Judgment:
        """Append a judgment (``relevant``/``partly``/``not``/``skip`` or a key of :data:`KEYS`).

        Raises:
            ValueError: an unknown judgment, naming the valid ones.
        """
        name = KEYS.get(judgment, judgment)
        if name not in GRADES:
            valid = ", ".join([*GRADES, *KEYS])
            raise ValueError(f"unknown judgment {judgment!r}; valid: {valid}")
        when = (now or datetime.now(UTC)).isoformat(timespec="seconds")
        j = Judgment(candidate.query_id, candidate.doc_id, GRADES[name], self.assessor, when)
        line = json.dumps(j._asdict(), ensure_ascii=False) + "\n"
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self.judgments.append(j)
        return j


def _latest(judgments: Iterable[Judgment]) -> dict[tuple[str, str, str], int | None]:
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
    rows = [(q, d, g) for (_, q, d), g in _latest(judgments).items() if g is not None]
    frame = pl.DataFrame(
        rows, schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64}, orient="row"
    )
    return (
        frame.group_by("query_id", "doc_id", maintain_order=True)
        .agg((pl.col("grade").mean() + 0.5).floor().cast(pl.Int32).alias("grade"))
        .with_columns((pl.col("grade") >= min_grade).alias("relevant"))
        .sort("query_id", "doc_id")
    )


class Agreement(NamedTuple):
    """Agreement of two assessors on the docs both graded."""

    kappa: float  # Cohen's kappa (1 = perfect, 0 = chance)
    overlap: int  # (query, doc) pairs both graded
    observed: float  # share of the overlap with the same grade


def agreement(a: str | Path | Iterable[Judgment], b: str | Path | Iterable[Judgment]) -> Agreement:
    """Cohen's kappa between two qrels (files or judgments) on the docs both graded.

    kappa = (p_o - p_e) / (1 - p_e), p_o the observed agreement and p_e the agreement expected
    from each assessor's grade frequencies (Cohen, 1960; scikit-learn's ``cohen_kappa_score``).
    Skips are not grades; each file's last grade per (query, doc) counts.

    Raises:
        ValueError: the two share no graded doc.
    """
    from convlab.extras import require

    cohen_kappa_score = require(
        "sklearn.metrics", "judge", feature="Cohen's kappa"
    ).cohen_kappa_score

    def grades(x: str | Path | Iterable[Judgment]) -> dict[tuple[str, str], int]:
        js = read_judgments(x)[0] if isinstance(x, str | Path) else list(x)
        return {(q, d): g for (_, q, d), g in _latest(js).items() if g is not None}

    ga, gb = grades(a), grades(b)
    both = sorted(set(ga) & set(gb))
    if not both:
        raise ValueError("the two qrels have no graded (query, doc) in common")
    ya = [ga[k] for k in both]
    yb = [gb[k] for k in both]
    observed = sum(x == y for x, y in zip(ya, yb, strict=True)) / len(both)
    # one grade throughout is full agreement (scikit-learn would give nan)
    kappa = 1.0 if len(set(ya) | set(yb)) == 1 else float(cohen_kappa_score(ya, yb))
    return Agreement(kappa, len(both), observed)
