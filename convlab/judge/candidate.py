"""A pooled doc as the assessor sees it: the record pooling makes and judging reads."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Candidate"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A pooled doc as the assessor sees it (nothing says which system found it).

    Attributes:
        query_id, query: the query.
        doc_id, conversation_id: the doc.
        text: the doc's own text.
        context: ``(role, text, is_target)`` of the chunks its unit resurrects, in order.
        terms: the query's words to highlight.
        position, total: where it is in the query's pool (1-based) and the pool's size.
    """

    query_id: str
    query: str
    doc_id: str
    conversation_id: str
    text: str
    context: tuple[tuple[str, str, bool], ...]
    terms: tuple[str, ...]
    position: int = 1
    total: int = 1
