r"""System names: what a name may hold, the file name made from it, and how it is shown.

A system's name comes from an experiment file that may have been written by someone else
(``systems.chosen.toml`` is meant to be shared and re-run), so it is text to show, never a path:

- :func:`check_name`: the one rule for a name (1 to :data:`NAME_MAX` characters, no control
  characters, no bidirectional overrides), applied at the edge (experiment files, ``--baseline``);
- :func:`file_stem`: the file name of a name's TREC run, a slug of safe characters and a short
  hash of the whole name, so that ``../../x``, ``/etc/x`` or ``a\x1b[31m`` stay inside the run
  folder and two names never share a file;
- :func:`shown`: a name on a terminal or in a one-line error, control characters as escapes;
  :func:`markdown` and :func:`markdown_code`: a name in ``report.md``.

Example:
    >>> file_stem("bm25:message"), file_stem("../../../x")
    ('bm25_message-e830a8d6', 'x-0274b718')
    >>> markdown("a|b <i>")
    'a\\|b \\<i\\>'
"""

from __future__ import annotations

import hashlib
import re

__all__ = [
    "NAME_MAX",
    "check_name",
    "escaped",
    "file_stem",
    "markdown",
    "markdown_code",
    "shown",
]

NAME_MAX = 200
"""The longest system name, in characters."""

_SLUG_MAX = 60
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
# C0 and C1 controls, DEL, the bidirectional overrides ("Trojan source") and lone surrogates
# (undecodable bytes of a command line), which no terminal or UTF-8 file should get raw
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_MARKDOWN = re.compile(r"([\\`|<>\[\]])")


def check_name(name: object, what: str = "name") -> str:
    """``name`` when it is a valid system name.

    Raises:
        ValueError: not a string, empty, longer than :data:`NAME_MAX`, or holding a control
            character (shown escaped).
    """
    if not isinstance(name, str):
        raise ValueError(f"{what} must be a string, not {type(name).__name__}")
    if not name.strip():
        raise ValueError(f"{what} is empty")
    if len(name) > NAME_MAX:
        raise ValueError(f"{what} has {len(name)} characters; at most {NAME_MAX}")
    bad = _CONTROL.search(name)
    if bad:
        raise ValueError(f"{what} {shown(name)} holds the control character {shown(bad[0])}")
    return name


def file_stem(name: str) -> str:
    """A file name for ``name``: its safe characters (at most 60) and 8 hex digits of its hash.

    Never empty, never ``.`` or ``..``, never a path; distinct names give distinct stems
    (but for a collision of the 32-bit hash).
    """
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    slug = _UNSAFE.sub("_", name).strip("._-")[:_SLUG_MAX].rstrip("._-")
    return f"{slug}-{digest}" if slug else digest


def escaped(text: object) -> str:
    r"""``text`` with control characters (and newlines) as ``\x..`` or ``\u....`` escapes.

    Example:
        >>> escaped("red \x1b[31m")
        'red \\x1b[31m'
    """
    return _CONTROL.sub(_escape, str(text))


def shown(text: object) -> str:
    """``text`` quoted, escaped (:func:`escaped`): a name in an error line or on a terminal."""
    return f"'{escaped(text)}'"


def _escape(m: re.Match[str]) -> str:
    c = ord(m[0])
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def markdown(text: object) -> str:
    r"""``text`` as literal Markdown: controls escaped, Markdown's punctuation backslashed.

    Safe in a table cell (``|``), and neither a link, an image nor HTML.
    """
    s = escaped(text)
    return _MARKDOWN.sub(r"\\\1", " ".join(s.split()))


def markdown_code(text: object) -> str:
    """``text`` as an inline code span (for names), safe in a Markdown table cell."""
    s = " ".join(escaped(text).split()).replace("|", "\\|")
    fence = "`" * (max((len(r) for r in re.findall("`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"
