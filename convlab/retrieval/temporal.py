"""The times a question names, read with dateparser, and the boost of messages inside them.

A question such as "What did John attend in March 2023?" or "Which book did I finish a week
ago?" names a time. :func:`time_windows` finds such expressions (``dateparser.search``), reads
each against the question's anchor (its own date where the data has one, LongMemEval's
``question_date``; else the latest message time of the conversations it searches) and turns each
into the window of its period: a day, a week (centred on the date), a calendar month or year.
Only expressions that carry a year, a capitalised month name, a numeric date (``7/22``) or a
relative cue (``ago``, ``last``, ``past``, ``yesterday``) are kept: dateparser also reads
ordinals ("18th"), modal verbs and weekdays as dates, and those add noise, not a time.

Many temporal questions name no time at all ("When did X ...?": LoCoMo's temporal category asks
for the time); the boost leaves those unchanged. The ``temporal`` doc ranker
(:class:`convlab.retrieval.rankers.temporal.TimeBoost`, its own config) applies it: a doc whose
time falls inside a window widened by ``slack_days`` on each side gets ``score + boost * |score|``.

Example:
    >>> from datetime import UTC, datetime
    >>> found = time_windows("What did Jon do in July 2022?", datetime(2023, 1, 5, tzinfo=UTC))
    >>> [(a.date().isoformat(), b.date().isoformat()) for a, b in found]
    [('2022-07-01', '2022-08-01')]
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from convlab.extras import require

__all__ = ["period_window", "time_windows"]

_CUES = re.compile(
    r"\b(?:19|20)\d\d\b"
    r"|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\b"
    r"|\b\d{1,2}/\d{1,2}\b"
    r"|\b(?:ago|last|past|yesterday)\b",
    re.IGNORECASE,
)
_MONTH = re.compile(r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\b")
_OTHER_CUES = re.compile(
    r"\b(?:19|20)\d\d\b|\b\d{1,2}/\d{1,2}\b|\b(?:ago|last|past|yesterday)\b", re.IGNORECASE
)

Window = tuple[datetime, datetime]


def _kept(expression: str) -> bool:
    """Whether a found expression carries a time cue (a year, a month, a numeric date, ...)."""
    return bool(_MONTH.search(expression) or _OTHER_CUES.search(expression))


def period_window(date: datetime, period: str) -> Window:
    """The window of ``period`` (``day``, ``week``, ``month``, ``year``) that holds ``date``.

    A week is the seven days centred on ``date`` (a relative week, "a week ago", names a day
    give or take); a month or a year is the calendar one; anything else is the day.

    Example:
        >>> a, b = period_window(datetime(2023, 2, 10, 15), "month")
        >>> a.isoformat(), b.isoformat()
        ('2023-02-01T00:00:00', '2023-03-01T00:00:00')
    """
    day = date.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "year":
        start = day.replace(month=1, day=1)
        return start, start.replace(year=start.year + 1)
    if period == "month":
        start = day.replace(day=1)
        end = (
            start.replace(year=start.year + 1, month=1)
            if start.month == 12
            else (start.replace(month=start.month + 1))
        )
        return start, end
    if period == "week":
        return day - timedelta(days=3), day + timedelta(days=4)
    return day, day + timedelta(days=1)


def time_windows(text: str, anchor: datetime | None) -> list[Window]:
    """The windows of the times ``text`` names, relative times read from ``anchor``.

    Args:
        text: the question.
        anchor: the question's own time (None: the current time, as dateparser reads it).

    Returns:
        UTC windows ``[start, end)``, one per kept expression, in the text's order.

    Raises:
        ImportError: dateparser is not installed (the ``eval`` extra).
    """
    base = None if anchor is None else anchor.astimezone(UTC).replace(tzinfo=None)
    return list(_windows(text, base))


@lru_cache(maxsize=4096)
def _windows(text: str, base: datetime | None) -> tuple[Window, ...]:
    search = require("dateparser.search", "eval", feature="reading times in questions")
    date_module = require("dateparser.date", "eval", feature="reading times in questions")
    settings = {"PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False}
    if base is not None:
        settings["RELATIVE_BASE"] = base
    if not _CUES.search(text):
        return ()
    found = search.search_dates(text, languages=["en"], settings=settings) or []
    reader = date_module.DateDataParser(languages=["en"], settings=settings)
    out = []
    for expression, _ in found:
        if not _kept(expression):
            continue
        data = reader.get_date_data(expression)
        if data.date_obj is None:
            continue
        start, end = period_window(data.date_obj, data.period or "day")
        out.append((start.replace(tzinfo=UTC), end.replace(tzinfo=UTC)))
    return tuple(out)
