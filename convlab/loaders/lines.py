"""Reading JSON-lines files record by record, every bad line a skip that names it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from convlab.loaders.files import open_regular
from convlab.loaders.jsontext import nesting_reason

if TYPE_CHECKING:
    from convlab.loaders.base import CorpusBuilder

__all__ = ["count_lines", "iter_json_lines", "parse_json_line"]


def iter_json_lines(path: Path, builder: CorpusBuilder) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for each JSON object line of a JSONL file.

    Blank lines are passed over; invalid UTF-8, invalid JSON and lines that are not objects
    are skipped through ``builder`` (so strict mode raises naming the line). The total of lines
    read is available afterwards as the last line number yielded or skipped.
    """
    loads = orjson.loads
    with open_regular(path) as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                record = loads(raw)
            except ValueError:  # orjson's JSONDecodeError, invalid UTF-8 included
                record = None
            if not isinstance(record, dict):  # blank, bad, or not an object: say which
                record = parse_json_line(raw, path, number, builder)
                if record is None:
                    continue
            yield number, record


def parse_json_line(
    raw: bytes, path: Path, number: int, builder: CorpusBuilder
) -> dict[str, Any] | None:
    """One JSONL line as an object, or ``None`` when blank or skipped (through ``builder``).

    The slow path of a line reader: its fast parse failed, this one says why.
    """
    try:
        record = orjson.loads(raw)
    except ValueError as exc:  # invalid UTF-8 too: orjson's message says so
        if raw.isspace():  # blank lines are checked only when they fail to parse
            return None
        reason = nesting_reason(exc) or f"invalid JSON ({str(exc).splitlines()[0][:80]})"
        builder.skip(path, number, reason)
        return None
    if not isinstance(record, dict):
        builder.skip(path, number, f"expected a JSON object, got {type(record).__name__}")
        return None
    return record


def count_lines(path: Path) -> int:
    """Number of lines in a file (a last line without newline counts)."""
    n = 0
    last = b"\n"
    with open_regular(path) as fh:
        while chunk := fh.read(1 << 20):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")
