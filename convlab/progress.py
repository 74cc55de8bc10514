"""One progress display for a whole run: its phases, and N of M with an ETA where M is known.

The stages of an index report to the :class:`Progress` in use (:func:`current`, set for a block
by :func:`using`): ``phase(name, total)`` when a phase starts, ``advance(n)`` as work is done.
The embedding cache opens the ``embed`` phase with the number of texts to embed and advances it
as batches finish, across all its cache segments; the embedders advance it batch by batch and
keep their own bars off while a display is in use. So a run shows one bar, not one per segment.

- :class:`NullProgress` (the default, and ``convlab index -q``): shows nothing.
- :class:`BarProgress`: one tqdm bar, reset for each phase: ``embed 420/1301 [00:10<00:21]``.
- :class:`LineProgress`: a line per phase of known size, for logs (stderr not a terminal).

Example:
    >>> with using(LineProgress(print)):
    ...     current().phase("embed", total=3)
    embed: 3
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import IO, Protocol, runtime_checkable

__all__ = [
    "BarProgress",
    "LineProgress",
    "NullProgress",
    "Progress",
    "current",
    "using",
]


@runtime_checkable
class Progress(Protocol):
    """Where a run reports its phases and its work done."""

    active: bool  # something is shown (embedders then keep their own bars off)
    done: int  # work done in the current phase

    def phase(self, name: str, total: int | None = None) -> None:
        """A phase starts: ``name`` (load, chunk, embed, index) and its work, when known."""
        ...

    def advance(self, n: int) -> None:
        """``n`` more units of work of the current phase are done."""
        ...

    def close(self) -> None:
        """The run is over."""
        ...


class NullProgress:
    """Shows nothing (``-q``, and any code run outside :func:`using`)."""

    active = False

    def __init__(self) -> None:
        self.done = 0

    def phase(self, name: str, total: int | None = None) -> None:
        """Start counting a new phase."""
        self.done = 0

    def advance(self, n: int) -> None:
        """Count ``n`` more."""
        self.done += n

    def close(self) -> None:
        """Nothing to close."""


_UNSIZED = "{desc} [{elapsed}]"
"""A phase of unknown size shows its name and the time it has taken."""


class BarProgress:
    """One tqdm bar for the whole run; each phase resets it in place, with its own total.

    Args:
        file: where the bar is drawn (stderr by default).
        mininterval: seconds between redraws.
    """

    active = True

    def __init__(self, file: IO[str] | None = None, *, mininterval: float = 0.2) -> None:
        from tqdm.auto import tqdm

        self.done = 0
        self._bar = tqdm(
            total=None,
            desc="load",
            bar_format=_UNSIZED,
            file=file,
            mininterval=mininterval,
            miniters=1,
            unit=" texts",
            dynamic_ncols=True,
            leave=False,
        )

    def phase(self, name: str, total: int | None = None) -> None:
        """Reset the bar for phase ``name`` of ``total`` units (None: a count without ETA)."""
        self.done = 0
        self._bar.set_description_str(name, refresh=False)
        self._bar.total = total  # reset() keeps the last total when given None
        self._bar.bar_format = None if total is not None else _UNSIZED
        self._bar.reset(total=total)

    def advance(self, n: int) -> None:
        """Move the bar by ``n``."""
        if n > 0:
            self.done += n
            self._bar.update(n)
            if self._bar.total is not None and self.done >= self._bar.total:
                self._bar.refresh()  # a phase's end is always drawn

    def write(self, message: str) -> None:
        """A line above the bar (log lines must not break it)."""
        self._bar.write(message, file=self._bar.fp)

    def close(self) -> None:
        """Remove the bar."""
        self._bar.close()


class LineProgress:
    """A line through ``emit`` per phase of known size (``embed: 1301``).

    For logs: output that is not a terminal gets no bar.
    """

    active = True

    def __init__(self, emit: Callable[[str], None]) -> None:
        self.done = 0
        self._emit = emit

    def phase(self, name: str, total: int | None = None) -> None:
        """Emit ``name: total`` for a phase of known size."""
        self.done = 0
        if total is not None:
            self._emit(f"{name}: {total}")

    def advance(self, n: int) -> None:
        """Count ``n`` more."""
        self.done += n

    def close(self) -> None:
        """Nothing to close."""


_CURRENT: ContextVar[Progress | None] = ContextVar("convlab_progress", default=None)


def current() -> Progress:
    """The progress display in use (a fresh :class:`NullProgress` outside :func:`using`)."""
    return _CURRENT.get() or NullProgress()


@contextlib.contextmanager
def using(progress: Progress) -> Iterator[Progress]:
    """Report to ``progress`` inside the block; it is closed when the block ends."""
    token = _CURRENT.set(progress)
    try:
        yield progress
    finally:
        _CURRENT.reset(token)
        progress.close()
