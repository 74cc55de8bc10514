"""``--since``/``--until``: the grammar of :func:`convlab.app.cli.options.parse_date`, by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from convlab.app.cli.options import parse_date
from convlab.app.exits import UsageError

# reference time for ages and day names: Tuesday 2026-03-10, 15:30 UTC
NOW = datetime(2026, 3, 10, 15, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "end", "expected"),
    [
        ("7d", False, "2026-03-03T15:30:00+00:00"),  # 7 x 24 h before
        ("7 days", False, "2026-03-03T15:30:00+00:00"),
        ("2w", False, "2026-02-24T15:30:00+00:00"),  # 14 days before
        ("1 week", True, "2026-03-03T15:30:00+00:00"),  # an age is a moment, even for --until
        ("3h", False, "2026-03-10T12:30:00+00:00"),
        ("48 hours", False, "2026-03-08T15:30:00+00:00"),
        ("0d", False, "2026-03-10T15:30:00+00:00"),
        ("today", False, "2026-03-10T00:00:00+00:00"),
        ("Today", True, "2026-03-10T23:59:59.999999+00:00"),
        ("yesterday", False, "2026-03-09T00:00:00+00:00"),
        (" yesterday ", True, "2026-03-09T23:59:59.999999+00:00"),
    ],
)
def test_parse_date_reads_ages_and_day_names_from_now(text: str, end: bool, expected: str) -> None:
    got = parse_date(text, "--since", end=end, now=NOW)
    assert got is not None
    assert got.isoformat() == expected


def test_parse_date_day_names_are_utc_days_of_now() -> None:
    # 00:30 on the 11th at +02:00 is 22:30 UTC on the 10th: "today" is the UTC day, the 10th
    local = datetime(2026, 3, 11, 0, 30, tzinfo=timezone(timedelta(hours=2)))
    got = parse_date("today", "--since", now=local)
    assert got is not None
    assert got.isoformat() == "2026-03-10T00:00:00+00:00"


@pytest.mark.parametrize("text", ["7", "d", "-7d", "1.5d", "7 fortnights", "7d ago", "tomorrow"])
def test_parse_date_refuses_what_the_grammar_lacks(text: str) -> None:
    with pytest.raises(UsageError, match=r"--since expects a date .* or today/yesterday"):
        parse_date(text, "--since", now=NOW)
