"""Search: filters, dense or lexical retrieval, rankers, best unit per doc.

:func:`search` (one query), :func:`search_many` (a batch, optionally each in its conversation),
:func:`search_haystacks` (each query in its own set of conversations); :class:`SearchOptions`
(:class:`Filters`, :class:`RetrievalOptions` with :class:`Retrieval`, and the doc rankers of
:mod:`convlab.retrieval.rankers`, each its own config) say how.
"""

from convlab.retrieval.filters import Filters
from convlab.retrieval.options import Retrieval, RetrievalOptions, SearchOptions
from convlab.retrieval.search import search, search_haystacks, search_many

__all__ = [
    "Filters",
    "Retrieval",
    "RetrievalOptions",
    "SearchOptions",
    "search",
    "search_haystacks",
    "search_many",
]
