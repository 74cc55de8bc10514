"""The one highlighter: the query's terms found in a text and marked, for every view."""

from __future__ import annotations

import html

from convlab.highlight import highlight, prefix_spans, query_words


def test_query_words_drop_stopwords_and_short_words() -> None:
    assert query_words("What was the pytest command we ran?") == ("command", "pytest", "ran")


def test_prefix_spans_mark_word_starts_or_whole_words() -> None:
    text = "Fixtures fix; prefix"
    # "fixture" is tried before "fix", so the first word's start is its longer match
    assert prefix_spans(text, ["fix", "fixture"]) == [(0, 7), (9, 12)]
    assert prefix_spans(text, ["fix", "fixture"], whole=True) == [(0, 8), (9, 12)]
    assert prefix_spans(text, []) == []


def test_highlight_skips_overlaps_and_escapes_each_piece() -> None:
    assert highlight("abcdef", [(3, 5), (0, 2), (1, 4)], "[", "]") == "[ab]c[de]f"
    out = highlight("<b>&amp", [(4, 7)], "<mark>", "</mark>", escape=html.escape)
    assert out == "&lt;b&gt;&amp;<mark>amp</mark>"
