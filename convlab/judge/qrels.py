"""The qrels log: graded judgments appended one fsynced line at a time; agreement.

The log's records and its reader (:func:`convlab.evaluation.judgments.read_judgments`, the
labels made of it) belong to the evaluation, which reads them.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from filelock import FileLock, Timeout

from convlab.errors import LoadError
from convlab.evaluation.judgments import (
    Judgment,
    latest_grades,
    parse_judgment,
    parse_judgments,
    read_judgments,
)
from convlab.files import TABLE, check, open_regular, read_regular
from convlab.judge.candidate import Candidate

__all__ = [
    "GRADES",
    "KEYS",
    "Agreement",
    "Conflict",
    "JudgmentLog",
    "agreement",
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


class Conflict(NamedTuple):
    """Two grades of one assessor for one (query, doc), recorded by two sessions at once.

    The rule is *last write wins*: ``later`` (this session's) is the grade that counts, as
    every reader of the log takes an assessor's last grade per (query, doc).
    """

    earlier: Judgment  # recorded by another session after this one read the log
    later: Judgment  # this session's, which replaces it


LOCK_TIMEOUT_S = 10.0
"""How long a write waits for another session's write to the same log (each takes a moment)."""


@dataclass
class JudgmentLog:
    """An assessor's append-only qrels file (state: what is judged, and how far it was read).

    Opening it reads what is there (a torn last line is cut off and kept in ``torn``, with a
    warning); :meth:`record` appends one judgment, flushed and fsynced.

    Several sessions may write one log at once (two windows of one assessor, or several
    assessors): each write holds an advisory lock on the file (``.NAME.lock`` beside it), first
    reads what the others appended since (:meth:`refresh`), then appends. When another session
    of the same assessor graded the same (query, doc) differently in the meantime, the write
    still goes ahead (last write wins) and the pair is reported in ``conflicts``.

    Args:
        path: the qrels JSONL file (created when missing).
        assessor: whose judgments are recorded; resuming skips only theirs.
    """

    path: Path
    assessor: str
    judgments: list[Judgment] = field(init=False)
    torn: str | None = field(init=False)
    conflicts: list[Conflict] = field(init=False)

    def __init__(self, path: str | Path, *, assessor: str) -> None:
        if not assessor.strip():
            raise ValueError("the assessor needs a name")
        self.path = Path(path)
        self.assessor = assessor
        self.conflicts = []
        self._theirs: dict[tuple[str, str], Judgment | None] = {}
        problem = check(self.path) if os.path.lexists(self.path) else None
        if problem is not None:  # refused before a lock file is made beside it (say, in /dev)
            raise LoadError(self.path, 0, problem)
        with self._lock():
            self.judgments, self.torn = read_judgments(self.path)
            if self.torn is not None:
                warnings.warn(
                    f"{self.path}: the last line was torn (a session killed mid-write) and is "
                    f"dropped: {self.torn[:80]!r}",
                    stacklevel=2,
                )
            self._offset, self._lines = self._end_lines()

    def _lock(self) -> FileLock:
        lock = self.path.with_name(f".{self.path.name}.lock")
        return FileLock(lock, timeout=LOCK_TIMEOUT_S)

    def _end_lines(self) -> tuple[int, int]:
        """Make the file end with a whole line (under the lock); return its size and lines.

        A torn last line (a session killed mid-write) is cut off; a whole last record without
        its newline gets one.
        """
        if not os.path.lexists(self.path):
            return 0, 0
        data = read_regular(self.path, limit=TABLE)
        keep = data.rfind(b"\n") + 1
        if keep < len(data):
            tail = data[keep:]
            try:
                parse_judgment(tail.decode("utf-8"))
                whole = True
            except (ValueError, UnicodeDecodeError):
                whole = False
            with self.path.open("r+b") as fh:
                if whole:  # a whole last record without its newline: end the line
                    fh.seek(0, os.SEEK_END)
                    fh.write(b"\n")
                    keep = len(data) + 1
                else:  # torn: the lost judgment of a killed session
                    fh.truncate(keep)
                fh.flush()
                os.fsync(fh.fileno())
        return keep, data.count(b"\n", 0, keep) + (keep > len(data))

    def refresh(self) -> list[Judgment]:
        """Read what other sessions appended since this log last read the file; return it."""
        with self._lock():
            return self._refresh()

    def _refresh(self) -> list[Judgment]:
        if not os.path.lexists(self.path):
            return []
        with open_regular(self.path, limit=TABLE) as fh:
            fh.seek(self._offset)
            data = fh.read()
        if not data:
            return []
        end = data.rfind(b"\n") + 1
        if end < len(data):  # a session killed mid-write left its line unended: mend, reread
            warnings.warn(f"{self.path}: another session left its last line unended", stacklevel=3)
            self._end_lines()
            return self._refresh()
        lines = data.split(b"\n")[:-1]
        new = parse_judgments(self.path, lines, first=self._lines + 1)
        self._offset += end
        self._lines += len(lines)
        self.judgments.extend(new)
        for j in new:
            if j.assessor == self.assessor:
                self._theirs[(j.query_id, j.doc_id)] = j
        return new

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

        Under the log's lock: what other sessions wrote is read first, and a different grade of
        this assessor for the same (query, doc) among it is added to ``conflicts``.

        Raises:
            ValueError: an unknown judgment, naming the valid ones.
            LoadError: another session held the log's lock for over :data:`LOCK_TIMEOUT_S`.
        """
        name = KEYS.get(judgment, judgment)
        if name not in GRADES:
            valid = ", ".join([*GRADES, *KEYS])
            raise ValueError(f"unknown judgment {judgment!r}; valid: {valid}")
        when = (now or datetime.now(UTC)).isoformat(timespec="seconds")
        j = Judgment(candidate.query_id, candidate.doc_id, GRADES[name], self.assessor, when)
        line = (json.dumps(j._asdict(), ensure_ascii=False) + "\n").encode("utf-8")
        try:
            with self._lock():
                self._refresh()
                key = (j.query_id, j.doc_id)
                earlier = self._theirs.pop(key, None)
                if earlier is not None and earlier.grade != j.grade:
                    self.conflicts.append(Conflict(earlier, j))
                with self.path.open("ab") as fh:
                    fh.write(line)
                    fh.flush()
                    os.fsync(fh.fileno())
                self._offset += len(line)
                self._lines += 1
        except Timeout:
            raise LoadError(
                self.path, 0, f"another session held its lock for over {LOCK_TIMEOUT_S:.0f} s"
            ) from None
        self.judgments.append(j)
        return j


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
        return {(q, d): g for (_, q, d), g in latest_grades(js).items() if g is not None}

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
