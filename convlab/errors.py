"""Errors that are the data's or the user's, not a bug: :class:`LoadError`, :class:`UnfitIndex`.

Every reader raises :class:`LoadError` for a file it cannot read; an index kind raises
:class:`UnfitIndex` when its parameters do not fit the data it is asked to index.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["LoadError", "UnfitIndex"]


class LoadError(ValueError):
    """A transcript could not be read; the message names the file and the line.

    Attributes:
        path: the file.
        line: 1-based line number (1 for whole-file JSON, 0 when the file as a whole is at fault).
        reason: what is wrong, in a few words.
    """

    def __init__(self, path: str | Path, line: int, reason: str) -> None:
        self.path = str(path)
        self.line = int(line)
        self.reason = reason
        super().__init__(f"{self.path}:{self.line}: {reason}")

    def __reduce__(self) -> tuple[type[LoadError], tuple[str, int, str]]:
        # raised in a loader worker process, it crosses back to the caller whole
        return (type(self), (self.path, self.line, self.reason))


class UnfitIndex(ValueError):
    """An index kind's parameters do not fit the data.

    A dimension its ``m`` does not divide, too few units to train on: the user's choice
    (``--index``), not a bug, so one line naming the fix and exit 2.
    """
