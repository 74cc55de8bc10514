r"""Keys split across lines: a view of a text with the breaks inside a long token removed.

The same view also removes the backslash of each escaped slash (``https:\/\/hooks.slack.com\/...``,
as PHP's ``json_encode`` writes a URL), so a secret inside an escaped URL is found whole.

A key is split in two ways: a shell line continued with a backslash (``KEY=abc\`` then
``def`` on the next line, indented or not) and a hard wrap at a fixed width (a terminal, ``fold``,
``base64 -w 76``, a PEM-like dump), where a long line ends inside a token and the next line goes
on with no space. :func:`joined` removes such breaks and keeps, for every character of the view,
its place in the text, so a secret found across a break is redacted whole, not only its first line.

A break counts as a wrap when the line before it is at least :data:`WRAP_MIN_WIDTH` characters
long and ends with at least :data:`WRAP_MIN_RUN` token characters, and the next line starts with
the rest of the token: a run of token characters that ends the line or is closed by a quote, a
bracket or a separator, or that looks random (mixed case or digits) when a space follows. So
``KEY=value`` lines in a row (``region = eu-west-1``, ``NEXT=...``) and prose are not joined.

Example:
    >>> view = joined("export KEY=abc\\\n  def\n")
    >>> view.text, view.origin[view.text.index("d")]
    ('export KEY=abcdef\n', 18)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["WRAP_MIN_RUN", "WRAP_MIN_WIDTH", "Joined", "joined"]

WRAP_MIN_WIDTH = 40
WRAP_MIN_RUN = 8
_TOKEN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=_-.~")
_RUN = _TOKEN - {"="}
_CLOSERS = frozenset(["", "\n", "\r", "\\", '"', "'", "`", ")", "]", "}", ",", ";"])


def _random_looking(run: str) -> bool:
    kinds = (
        any(c.islower() for c in run),
        any(c.isupper() for c in run),
        any(c.isdigit() for c in run),
    )
    return len(run) >= 6 and sum(kinds) >= 2


def _rest_of_token(text: str, after: int) -> bool:
    """Whether the next line, from ``after``, reads as the end of a wrapped token."""
    end = after
    while end < len(text) and text[end] in _RUN:
        end += 1
    while end < len(text) and text[end] == "=":
        end += 1
    follower = text[end : end + 1]
    if follower in _CLOSERS:
        return end > after
    return follower in " \t" and _random_looking(text[after:end])


@dataclass(frozen=True, slots=True)
class Joined:
    """A text with some line breaks removed.

    Attributes:
        text: the view.
        origin: for each character of ``text``, its index in the original text (one more item
            at the end: the original length).
        breaks: indexes in ``text`` where a break was removed.
    """

    text: str
    origin: list[int]
    breaks: list[int]

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that ``text[start:end]`` came from."""
        return self.origin[start], self.origin[end - 1] + 1


# A line break: a newline, or "\\n" escaped in JSON (tool input is stored as JSON).
_BREAKS = ("\n", "\\n")


def _breaks(text: str) -> Iterator[tuple[int, int, bool]]:
    r"""``(start, end, continued)`` of each line break that may join two parts of a token.

    ``continued``: a backslash before the break continues the line (``\`` then a newline, or
    ``\\`` then ``\n`` in JSON). Only breaks after a token character or a backslash are
    given: a cheap test that leaves out most breaks of prose and code.
    """
    for brk in _BREAKS:
        at = text.find(brk)
        while at > 0:
            start, end = at, at + len(brk)
            if brk == "\n" and text[at - 1] == "\r":
                start -= 1
            before = text[start - 1]
            if before == "\\":
                width = 2 if brk == "\\n" else 1
                if text[start - width : start] == "\\" * width:
                    yield start - width, end, True
            elif before in _TOKEN and text[end : end + 1] in _TOKEN:
                yield start, end, False
            at = text.find(brk, at + 1)


def _line_start(text: str, end: int) -> int:
    escaped = text.rfind("\\n", 0, end)
    return max(text.rfind("\n", 0, end) + 1, escaped + 2 if escaped >= 0 else 0)


def _cut(text: str, start: int, after: int, continued: bool) -> int | None:
    """Where the line after the break ``text[start:after]`` goes on, or None: no join."""
    if continued:
        if text[start - 1 : start] not in _TOKEN:
            return None
        while after < len(text) and text[after] in " \t":
            after += 1
        return after if text[after : after + 1] in _TOKEN and after < len(text) else None
    if after >= len(text) or start < WRAP_MIN_RUN:
        return None
    if start - _line_start(text, start) < WRAP_MIN_WIDTH:
        return None
    if any(c not in _TOKEN for c in text[start - WRAP_MIN_RUN : start]):
        return None
    return after if _rest_of_token(text, after) else None


def _escaped_slashes(text: str) -> Iterator[tuple[int, int]]:
    r"""The backslash of each ``\/`` (JSON may escape a slash: ``https:\/\/hooks...``)."""
    at = text.find("\\/")
    while at >= 0:
        yield at, at + 1
        at = text.find("\\/", at + 2)


def joined(text: str) -> Joined | None:
    r"""``text`` with continuations, wraps inside tokens and escapes of slashes removed.

    None when there is none: no backslash continuation, no hard wrap, no ``\/``.
    """
    wraps = "\n" in text or "\\n" in text
    if not wraps and "\\/" not in text:
        return None
    cuts = sorted(
        [
            *((s, a) for s, e, c in _breaks(text) if (a := _cut(text, s, e, c)) is not None),
            *_escaped_slashes(text),
        ]
        if wraps
        else _escaped_slashes(text)
    )
    if not cuts:
        return None
    parts: list[str] = []
    origin: list[int] = []
    breaks: list[int] = []
    done = 0
    for start, after in cuts:
        parts.append(text[done:start])
        origin.extend(range(done, start))
        breaks.append(len(origin))
        done = after
    parts.append(text[done:])
    origin.extend(range(done, len(text) + 1))
    return Joined("".join(parts), origin, breaks)
