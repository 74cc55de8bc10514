"""Why a hit matched, on the screen: the query's terms, an excerpt around them, highlights.

The one highlighter of the package: every view (the CLI, the search panel, the judge on a
terminal and in a notebook) finds the spans of the query's terms in a text and marks them with
:func:`highlight`. Terms are found two ways:

- *stemmed terms* (:func:`query_terms`, :func:`term_spans`, the CLI's hit lines): a query word
  that is not an English stopword (:mod:`convlab.stopwords`), lower-cased and Snowball-stemmed as
  BM25 stems it (PyStemmer, the ``convlab-memory[index]`` extra; without it, unstemmed), so
  *groups* in a message matches *group* in the query;
- *word starts* (:func:`query_words`, :func:`prefix_spans`, the panels and the judge): a query
  word of three letters or more, not a stopword, matched where a text word starts with it, so
  *cache* also marks *caches* and *cached*.

Which message of a hit is shown is the system's choice (:func:`convlab.systems.match.with_matches`);
this module cuts it around the terms and marks them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from convlab.stopwords import ENGLISH_STOP_WORDS

__all__ = ["excerpt", "highlight", "prefix_spans", "query_terms", "query_words", "term_spans"]

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


def query_words(query: str) -> tuple[str, ...]:
    """The words of ``query`` worth marking where a text word starts with them.

    Three letters or more, lower-cased, not English stopwords, sorted.

    Example:
        >>> query_words("when did we fix the flaky Fixture")
        ('did', 'fix', 'fixture', 'flaky')
    """
    words = {w for w in re.findall(r"\w{3,}", query.lower()) if w not in ENGLISH_STOP_WORDS}
    return tuple(sorted(words))


def prefix_spans(text: str, words: Sequence[str], *, whole: bool = False) -> list[Span]:
    """The (start, end) of each place a word of ``text`` starts with one of ``words``.

    Case is ignored; the longest of ``words`` is tried first. A span covers the matching start
    only, or with ``whole`` the whole text word.

    Example:
        >>> prefix_spans("The caches", ["cache"]), prefix_spans("The caches", ["cache"], whole=True)
        ([(4, 9)], [(4, 10)])
    """
    if not words:
        return []
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    pattern = re.compile(r"\b(?:" + alternatives + ")" + (r"\w*" if whole else ""), re.IGNORECASE)
    return [m.span() for m in pattern.finditer(text)]


def highlight(
    text: str,
    spans: Sequence[Span],
    on: str,
    off: str,
    *,
    escape: Callable[[str], str] | None = None,
) -> str:
    """``text`` with each span between ``on`` and ``off``.

    A span that overlaps an earlier one is left unmarked. With ``escape`` (``html.escape``) each
    piece of ``text`` is escaped on its own, so a mark never splits an entity (a query word
    ``amp`` does not match inside the ``&amp;`` that ``&`` becomes).

    Example:
        >>> highlight("a support group", [(2, 9)], "[", "]")
        'a [support] group'
        >>> import html
        >>> highlight("AT&T amp", [(5, 8)], "<mark>", "</mark>", escape=html.escape)
        'AT&amp;T <mark>amp</mark>'
    """
    esc = escape or (lambda t: t)
    out, at = [], 0
    for a, b in sorted(spans):
        if a < at:
            continue
        out += [esc(text[at:a]), on, esc(text[a:b]), off]
        at = b
    out.append(esc(text[at:]))
    return "".join(out)
