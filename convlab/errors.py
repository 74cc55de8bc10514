"""The error every reader raises for a file it cannot read: :class:`LoadError`."""

from __future__ import annotations

from pathlib import Path

__all__ = ["LoadError"]


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
