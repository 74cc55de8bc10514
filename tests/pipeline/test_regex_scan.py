"""The structure of rule patterns (groups, top-level alternatives), worked out by hand."""

from __future__ import annotations

import pytest

from convlab.pipeline.regex_scan import group_end, split_alternatives, structure, top_level_bar


def test_escapes_and_classes_hide_their_parentheses_and_bars() -> None:
    # ( at 1 opens, | at 3 inside it, [|)] is a class, ) at 9 closes, | at 10 is top level
    got = [(i, c, d) for i, c, d in structure(r"a(b|[|)]c)|d\(\|")]
    assert got == [(1, "(", 0), (3, "|", 1), (9, ")", 0), (10, "|", 0)]


@pytest.mark.parametrize(
    ("pattern", "start", "end"),
    [
        ("(?i)ab(c)d)e", 4, 10),  # the group (?i) opened before start closes at 10
        ("(?i)abc", 4, 7),  # at the top level: the end
        ("x(?i)[)]\\))y", 5, 10),  # a ) in a class and an escaped one do not close it
    ],
)
def test_group_end(pattern: str, start: int, end: int) -> None:
    assert group_end(pattern, start) == end


def test_split_alternatives_and_top_level_bar() -> None:
    assert split_alternatives("a(b|c)|[|]d|e") == ["a(b|c)", "[|]d", "e"]
    assert split_alternatives("abc") == ["abc"]
    assert split_alternatives("|a|") == ["", "a", ""]
    assert top_level_bar("a|b")
    assert not top_level_bar("(a|b)c")
    assert not top_level_bar("[]|]x")  # a ] first in a class is a literal
