"""Terminal text: escaped controls, columns of wide characters, clipping, paths, wrapping.

Widths count terminal columns: a wide CJK character or an emoji counts two, a combining mark none.
"""

from __future__ import annotations

import os
import shutil
import textwrap
import unicodedata

__all__ = ["clip", "columns", "pad", "printable", "short_path", "terminal_width", "wrapped"]

# C0 and C1 controls but newline and tab, DEL, and the bidirectional overrides ("Trojan
# source"): shown as escapes, so a transcript cannot move the cursor, recolour or retitle the
# terminal, or reorder what is shown
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if c not in (9, 10)}
_CONTROLS |= {c: f"\\u{c:04x}" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}
# a byte of a file name that is not UTF-8 (a surrogate escape, os.fsdecode's): shown as the byte
_CONTROLS |= {c: f"\\x{c - 0xDC00:02x}" for c in range(0xDC80, 0xDD00)}


def printable(text: str | None) -> str:
    r"""``text`` with control characters (newline and tab aside) written as escapes.

    Example:
        >>> printable("red \x1b[31malert")
        'red \\x1b[31malert'
    """
    return (text or "").translate(_CONTROLS)


def _char_columns(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1


def columns(text: str) -> int:
    """Terminal columns ``text`` takes: two for a wide (CJK, emoji) character, none for a mark.

    Example:
        >>> columns("ab"), columns("日本")
        (2, 4)
    """
    return sum(_char_columns(ch) for ch in text)


def clip(text: str | None, n: int) -> str:
    """``text`` on one line (whitespace runs as one space), cut to ``n`` columns with ``…``.

    Example:
        >>> clip("a  b   cde", 5), clip("日本語のテキスト", 7)
        ('a b …', '日本語…')
    """
    t = " ".join((text or "").split())
    if columns(t) <= n:
        return t
    out, used = [], 0
    for ch in t:
        used += _char_columns(ch)
        if used > n - 1:
            break
        out.append(ch)
    return "".join(out) + "…"


def pad(text: str, n: int) -> str:
    """``text`` followed by spaces up to ``n`` columns."""
    return text + " " * max(0, n - columns(text))


def terminal_width() -> int:
    """Columns of the terminal (``$COLUMNS`` first; 100 when stdout is not a terminal)."""
    return max(40, shutil.get_terminal_size((100, 24)).columns)


def short_path(path: str, n: int = 60) -> str:
    """``path`` with the home folder as ``~`` and, when longer than ``n``, its head as ``…``."""
    home = os.path.expanduser("~")
    p = "~" + path[len(home) :] if home not in ("", "/") and path.startswith(home + "/") else path
    if len(p) <= n:
        return p
    parts = p.split("/")
    out = parts[-1]
    for part in reversed(parts[:-1]):
        if len(part) + len(out) + 3 > n:
            break
        out = f"{part}/{out}"
    return f"…/{out}"


def wrapped(label: str, text: str, width: int) -> list[str]:
    """``label`` then ``text`` wrapped to ``width``, continuation lines under the text.

    The text is made :func:`printable` first (newlines start new lines).
    """
    indent = " " * len(label)
    lines: list[str] = []
    for i, para in enumerate(printable(text).splitlines() or [""]):
        first = label if i == 0 else indent
        lines += textwrap.wrap(
            para,
            width=width,
            initial_indent=first,
            subsequent_indent=indent,
            break_on_hyphens=False,
            replace_whitespace=False,
        ) or [first.rstrip()]
    return lines
