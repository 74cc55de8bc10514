"""Reading JSON-lines files record by record, every bad line a skip that names it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from convlab.errors import LoadError
from convlab.files import open_regular, read_regular
from convlab.loaders.jsontext import (
    TOO_DEEP,
    NestingError,
    nesting_reason,
    parse_json,
    too_deep_reason,
)

if TYPE_CHECKING:
    from convlab.loaders.base import CorpusBuilder

__all__ = ["iter_json_lines", "iter_json_records", "parse_json_line", "read_each"]


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


def iter_json_records(path: Path, builder: CorpusBuilder) -> Iterator[tuple[int, Any]]:
    """``(line, record)`` pairs of a file of records: the whole file as JSON, or JSONL.

    A whole-file list is one record per item (all at line 1), except a list of messages
    (objects with ``role``), which is one record ``{"messages": [...]}``; any other document is
    one record. A file that is not JSON as a whole is read line by line.

    A ``.jsonl`` file too deeply nested to parse whole is read line by line (the deep line is
    skipped); any other file too deeply nested is a :class:`LoadError` naming the line.
    """
    raw = read_regular(path)
    try:
        data = parse_json(raw)
    except UnicodeDecodeError:
        raise LoadError(path, 1, "invalid UTF-8") from None
    except NestingError as exc:
        if path.suffix.lower() != ".jsonl":
            raise LoadError(path, exc.line, exc.reason) from None
        yield from iter_json_lines(path, builder)
        return
    except ValueError:
        yield from iter_json_lines(path, builder)
        return
    if isinstance(data, list) and data and isinstance(data[0], dict) and "role" in data[0]:
        yield 1, {"messages": data}
    elif isinstance(data, list):
        for item in data:
            yield 1, item
    else:
        yield 1, data


def read_each(
    path: Path,
    builder: CorpusBuilder,
    records: Iterable[tuple[int, Any]],
    handle: Callable[[int, int, Any], None],
) -> int:
    """Hand the ``i``-th ``(line, record)`` of ``records`` to ``handle(i, line, record)``.

    A record nested too deeply to handle (:data:`~convlab.loaders.jsontext.TOO_DEEP`) is a skip
    through ``builder`` naming its line; the others go on.

    Returns:
        The highest line read (0 when there was none): what a reader's ``read`` returns.
    """
    n = 0
    for i, (line, rec) in enumerate(records):
        n = max(n, line)
        try:
            handle(i, line, rec)
        except TOO_DEEP as exc:  # e.g. an id or tool arguments nested too deeply
            builder.skip(path, line, too_deep_reason(exc))
    return n


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
