"""The structure of a regular expression's text: its groups and alternatives, found once.

Redaction rewrites and inspects rule patterns (gitleaks' RE2 translated to Python's ``re``, and
the fast search of patterns that start at a word): where a group closes, where a top-level ``|``
splits the alternatives. :func:`structure` walks a pattern once, skipping escapes and character
classes (a ``]`` first in a class, or after ``^``, is a literal), and names every parenthesis and
bar with its nesting depth; the questions are small functions over it.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

__all__ = ["group_end", "split_alternatives", "structure", "top_level_bar"]


def structure(pattern: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """``(index, char, depth)`` of each ``(``, ``)`` and ``|`` outside escapes and classes.

    ``depth`` counts the groups open around the character, relative to ``start`` (for a
    parenthesis, around its group: a ``)`` that closes a group opened before ``start`` is -1).

    Example:
        >>> [(c, d) for _, c, d in structure("a(b|[|)]c)|d")]
        [('(', 0), ('|', 1), (')', 0), ('|', 0)]
    """
    depth, i, in_class = 0, start, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                i += 1  # a ']' first in a class is a literal
        elif c == "(":
            yield i, c, depth
            depth += 1
        elif c == ")":
            depth -= 1
            yield i, c, depth
        elif c == "|":
            yield i, c, depth
        i += 1


def group_end(pattern: str, start: int) -> int:
    """Where the group holding ``start`` closes (``len(pattern)`` at the top level).

    Example:
        >>> group_end("(?i)ab(c)d)e", 4)
        10
    """
    for i, c, depth in structure(pattern, start):
        if c == ")" and depth < 0:
            return i
    return len(pattern)


def split_alternatives(part: str) -> list[str]:
    """``part`` split at its top-level ``|``.

    Example:
        >>> split_alternatives("a(b|c)|[|]d|e")
        ['a(b|c)', '[|]d', 'e']
    """
    cuts = [i for i, c, depth in structure(part) if c == "|" and depth == 0]
    bounds = [-1, *cuts, len(part)]
    return [part[a + 1 : b] for a, b in pairwise(bounds)]


def top_level_bar(pattern: str) -> bool:
    """Whether ``pattern`` has alternatives at its top level.

    Example:
        >>> top_level_bar("(a|b)c"), top_level_bar("a|b")
        (False, True)
    """
    return any(c == "|" and depth == 0 for _, c, depth in structure(pattern))
