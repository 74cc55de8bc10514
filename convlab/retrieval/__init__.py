"""Search: filters, dense or lexical retrieval, rankers, best unit per doc.

:func:`search` (one query), :func:`search_many` (a batch, optionally each in its conversation),
:func:`search_haystacks` (each query in its own set of conversations); :class:`SearchOptions`
and :class:`Retrieval` say how; :mod:`convlab.retrieval.rankers` holds the rankers.
"""

from convlab.retrieval.options import Retrieval, SearchOptions
from convlab.retrieval.search import search, search_haystacks, search_many

__all__ = ["Retrieval", "SearchOptions", "search", "search_haystacks", "search_many"]
