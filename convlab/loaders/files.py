"""Whole-file JSON transcripts, read with the safe opener (:mod:`convlab.files`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from convlab.errors import LoadError
from convlab.files import Limit, read_regular
from convlab.loaders.jsontext import NestingError, parse_json

__all__ = ["load_json_file"]


def load_json_file(path: str | Path, *, limit: Limit | int | None = None) -> Any:
    """Read and parse a whole-file JSON transcript (or any JSON input, under ``limit``).

    Raises:
        LoadError: naming the file and line for every way this can fail: not a readable regular
            file (line 0), invalid UTF-8, invalid JSON, JSON nested deeper than the parser
            follows (``"JSON nested deeper than 1024 levels"``), over ``limit``.
    """
    raw = read_regular(path, limit=limit)
    try:
        return parse_json(raw)
    except NestingError as exc:
        raise LoadError(path, exc.line, exc.reason) from None
    except UnicodeDecodeError:
        raise LoadError(path, 1, "invalid UTF-8") from None
    except ValueError as exc:
        line = getattr(exc, "lineno", 1)
        raise LoadError(path, line, f"invalid JSON ({str(exc).splitlines()[0][:80]})") from None
