"""JSON in and out with bounded nesting: the one place readers parse and re-serialise JSON.

Python's :mod:`json` recurses once per level of nesting, so a document nested past the
interpreter's recursion limit (1,000 levels by default) raises :class:`RecursionError`, which is
not a :class:`ValueError` and used to escape ``load()``. Here every such case becomes a
:class:`NestingError` (a :class:`ValueError`) that readers turn into a skip naming the line.

Parsing uses :func:`json.loads`, which keeps integers over 64 bits exact and accepts ``NaN``,
the infinities and lone surrogate escapes, as the readers always did; only when it gives up on
depth does orjson, whose limit is a fixed :data:`MAX_DEPTH` levels, parse the text again: within
the limit its value is returned, past it its error names the line. Writing uses orjson (15x
faster than :func:`json.dumps` on a small tool input) and falls back to :func:`json.dumps` for
what orjson refuses (integers over 64 bits, lone surrogates, nesting over 254 levels).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import orjson

__all__ = [
    "MAX_DEPTH",
    "TOO_DEEP",
    "NestingError",
    "json_head",
    "json_text",
    "nesting_reason",
    "parse_json",
    "parse_json_or",
    "too_deep_reason",
]

MAX_DEPTH = 1024
"""Levels of nested arrays and objects orjson parses; one more is a :class:`NestingError`."""


class NestingError(ValueError):
    """JSON nested deeper than a parser or writer can follow.

    Attributes:
        line: the 1-based line where the limit was passed (1 when it is not known).
        reason: the message, ``"JSON nested deeper than ..."``.
    """

    def __init__(self, reason: str, line: int = 1) -> None:
        self.reason = reason
        self.line = line
        super().__init__(reason)


def nesting_reason(exc: ValueError) -> str | None:
    """The skip reason for an orjson decode error that is about depth, else ``None``."""
    if str(exc).startswith("depth limit exceeded"):
        return f"JSON nested deeper than {MAX_DEPTH} levels"
    return None


def _too_deep_for_python(action: str) -> str:
    return (
        f"JSON nested deeper than Python's json module can {action} "
        f"(recursion limit {sys.getrecursionlimit()})"
    )


def parse_json(data: bytes | str) -> Any:
    """Parse one JSON document (a whole file, or JSON text inside a record such as tool arguments).

    Raises:
        NestingError: nested too deeply to parse; ``line`` says where when orjson can tell.
        ValueError: not JSON (a :class:`json.JSONDecodeError` with ``lineno``) or not UTF-8
            (a :class:`UnicodeDecodeError`).

    Example:
        >>> parse_json(b'{"a": [1, 2]}')
        {'a': [1, 2]}
        >>> parse_json("[" * 5000 + "]" * 5000)
        Traceback (most recent call last):
        ...
        convlab.loaders.jsontext.NestingError: JSON nested deeper than 1024 levels
    """
    try:
        return json.loads(data)
    except RecursionError:
        pass
    # The standard library gave up on depth. orjson's limit is fixed: within it, its value is
    # the document (orjson refuses NaN and lone surrogates, so it only differs in rounding
    # integers over 64 bits); past it, its error names the line.
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        reason = nesting_reason(exc)
        if reason is not None:
            raise NestingError(reason, exc.lineno) from None
    raise NestingError(_too_deep_for_python("parse")) from None


def parse_json_or(text: str, default: Any) -> Any:
    """``text`` parsed as JSON, or ``default`` when it is not JSON (tool arguments, say).

    Raises:
        NestingError: JSON nested too deeply to parse: the reader skips the record, naming
            its line, rather than keeping ``default``.

    Example:
        >>> parse_json_or('{"cmd": "ls"}', None), parse_json_or("ls -l", {"input": "ls -l"})
        ({'cmd': 'ls'}, {'input': 'ls -l'})
    """
    try:
        return parse_json(text)
    except NestingError:
        raise
    except ValueError:
        return default


def json_text(value: object) -> str:
    """Compact JSON text of a tool input (keys kept in source order, non-ASCII kept).

    orjson writes it; what it refuses goes through :func:`json.dumps`; NaN and the infinities
    become ``null`` with orjson, as strict JSON has them.

    Raises:
        NestingError: ``value`` is nested too deeply for :func:`json.dumps` to write.

    Example:
        >>> json_text({"cmd": "ls", "n": 2**70})
        '{"cmd":"ls","n":1180591620717411303424}'
    """
    try:
        return orjson.dumps(value, default=str).decode()
    except (TypeError, ValueError):
        pass
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except RecursionError:
        raise NestingError(_too_deep_for_python("write")) from None


TOO_DEEP = (NestingError, RecursionError)
"""What a reader catches around one record: a value nested too deeply to parse, write back or
even ``str()`` (Python's ``repr`` recurses too)."""


def too_deep_reason(exc: BaseException) -> str:
    """The skip reason for an error of :data:`TOO_DEEP`."""
    if isinstance(exc, NestingError):
        return exc.reason
    return _too_deep_for_python("handle")


def json_head(path: Path, head: bytes) -> bytes | None:
    """The first bytes of a ``.json`` or ``.jsonl`` file without spaces, else ``None``.

    What JSON sniffers test: with the spaces gone, ``"key": value`` and ``"key":value`` match
    the same pattern.
    """
    if path.suffix.lower() not in (".json", ".jsonl"):
        return None
    return head.replace(b" ", b"")
