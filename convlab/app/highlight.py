"""Why a hit matched, on the screen: the query's terms, an excerpt around them, highlights.

A *term* is a query word that is not an English stopword (:mod:`convlab.stopwords`),
lower-cased and Snowball-stemmed as BM25 stems it (PyStemmer, the ``convlab-memory[index]`` extra;
without it, unstemmed), so *groups* in a message matches *group* in the query. Which message of
a hit is shown is the system's choice (:func:`convlab.systems.match.with_matches`); this module
cuts it around the terms and marks them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import Any

from convlab.stopwords import ENGLISH_STOP_WORDS

__all__ = ["excerpt", "highlight", "query_terms", "term_spans"]

_WORD = re.compile(r"\w+")
Span = tuple[int, int]


@cache
def _stemmer() -> Any:
    """The BM25 index's English Snowball stemmer (PyStemmer), or None without the extra."""
    try:
        import Stemmer
    except ImportError:
        return None
    return Stemmer.Stemmer("english")


def _stem(words: list[str]) -> list[str]:
    stemmer = _stemmer()
    return list(stemmer.stemWords(words)) if stemmer is not None else words


def query_terms(query: str) -> frozenset[str]:
    """The stemmed, non-stopword terms of ``query``.

    Example:
        >>> sorted(query_terms("When did Caroline go to the support groups?"))
        ['carolin', 'did', 'group', 'support']
    """
    words = [
        w for w in (m.group().lower() for m in _WORD.finditer(query)) if w not in ENGLISH_STOP_WORDS
    ]
    return frozenset(_stem(words))


def term_spans(text: str, terms: frozenset[str]) -> list[Span]:
    """The (start, end) of every word of ``text`` whose stem is one of ``terms``.

    Example:
        >>> term_spans("Support groups help.", query_terms("group support"))
        [(0, 7), (8, 14)]
    """
    if not terms:
        return []
    found = list(_WORD.finditer(text))
    stems = _stem([m.group().lower() for m in found])
    return [m.span() for m, s in zip(found, stems, strict=True) if s in terms]


def excerpt(text: str, spans: Sequence[Span], n: int) -> tuple[str, list[Span]]:
    """At most ``n`` characters of ``text`` around its densest run of ``spans``.

    Returns the excerpt, ``…`` marking a cut at either end, and the spans moved into it.

    The window starts a little before the first span of the window holding the most spans (the
    start of the text when everything fits, or nothing matched).

    Example:
        >>> excerpt("one two three four five six", [(14, 18)], 12)
        ('… three four…', [(8, 12)])
    """
    if len(text) <= n:
        return text, [s for s in spans if s[1] <= len(text)]
    if spans:
        best, best_count = spans[0][0], 0
        for a, _ in spans:
            count = sum(1 for s, e in spans if s >= a and e <= a + n)
            if count > best_count:
                best, best_count = a, count
        start = max(0, min(best - n // 5, len(text) - n))
    else:
        start = 0
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):  # a whole word
        start -= 1
    end = min(len(text), start + n - 2)
    if end < len(text):
        while end > start and not text[end].isspace():  # end on a word
            end -= 1
    head = "… " if start > 0 else ""
    tail = "…" if end < len(text) else ""
    shift = len(head) - start
    moved = [(a + shift, b + shift) for a, b in spans if a >= start and b <= end]
    return f"{head}{text[start:end].rstrip()}{tail}", moved


def highlight(text: str, spans: Sequence[Span], on: str, off: str) -> str:
    """``text`` with each span between ``on`` and ``off``.

    Example:
        >>> highlight("a support group", [(2, 9)], "[", "]")
        'a [support] group'
    """
    out, at = [], 0
    for a, b in sorted(spans):
        if a < at:
            continue
        out += [text[at:a], on, text[a:b], off]
        at = b
    out.append(text[at:])
    return "".join(out)
