"""Times as transcripts write them: ISO 8601 strings or epoch seconds or milliseconds."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["parse_time"]


def parse_time(value: object) -> datetime | None:
    """Parse an ISO-8601 string or epoch seconds/milliseconds to an aware UTC datetime.

    Returns ``None`` for ``None``, empty strings and values that are not times (the caller
    decides whether that is worth a skip).
    """
    if value is None or value == "":
        return None
    if type(value) is str:  # fast path: ISO 8601 with Z or an offset (Python 3.11 parses both)
        try:
            dt = datetime.fromisoformat(value)
        except ValueError:
            return None
        if dt.tzinfo is UTC:
            return dt
        return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
    try:
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            seconds = value / 1000 if value > 1e11 else value
            return datetime.fromtimestamp(seconds, tz=UTC)
        if isinstance(value, str):
            s = value.strip()
            if s.endswith("Z"):
                s = s[:-1] + "+00:00"
            dt = datetime.fromisoformat(s)
            return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None
