"""Look-ups of one units frame over one chunks frame, made once and passed to every measurement.

An evaluation measures resurrection for every system and policy over the units and chunks of
each strategy: the same two frames, again and again. :meth:`Shared.of` builds their
:class:`~convlab.protocols.Layout` and the chunks' texts and conversation order once;
the caller keeps the record and passes it to
:func:`convlab.resurrection.budget_measures` (``shared=``) for each system and policy over
those frames. Nothing is cached behind the caller's back: no module state, no key on a frame's
identity.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import polars as pl

from convlab import schema
from convlab.protocols import Layout

__all__ = ["Shared", "context_text"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Shared:
    """What every measurement over one units frame and one chunks frame reads.

    Attributes:
        layout: the units and chunks as look-ups.
        doc_chunks: doc id -> the set of its chunk ids.
        texts: chunk id -> its text.
        order: chunk id -> its place in conversation order.
        normalized: chunk id -> its normalised text (filled as chunks come back).
        message_chunks: message id -> the set of its chunk ids (what a query's ``evidence``
            names, :data:`convlab.schema.QUERY_EVIDENCE`).
    """

    layout: Layout
    doc_chunks: dict[str, set[str]]
    texts: dict[str, str]
    order: dict[str, int]
    normalized: dict[str, str] = field(default_factory=dict)
    message_chunks: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, units: pl.DataFrame, chunks: pl.DataFrame) -> Shared:
        """The look-ups of ``units`` over ``chunks``.

        Raises:
            ValueError: as :meth:`Layout.of`.
        """
        layout = Layout.of(units, chunks)
        message_chunks: dict[str, set[str]] = {}
        for m, c in chunks.select(schema.message_id_expr(), "chunk_id").iter_rows():
            message_chunks.setdefault(m, set()).add(c)
        return cls(
            layout=layout,
            doc_chunks={d: set(cs) for d, cs in layout.doc_chunks.items()},
            texts=dict(chunks.select("chunk_id", "text").iter_rows()),
            # conversation order, so an answer spanning two adjacent chunks is found in the context
            order={
                c: i
                for i, c in enumerate(
                    chunks.sort("conversation_id", "position")["chunk_id"].to_list()
                )
            },
            message_chunks=message_chunks,
        )


def context_text(alive: dict[str, int], memo: Shared, normalize: Callable[[str], str]) -> str:
    """The normalised text of the chunks ``alive``, in conversation order.

    Equal to ``normalize(" ".join(texts in order))`` for SQuAD's normalisation: lower-casing
    and removing punctuation act per character and the space between chunks is a word boundary
    on both sides (for the articles and the final sigma of ``str.lower``), so each chunk is
    normalised once (kept in ``memo.normalized``) and the non-empty ones joined by single spaces.
    """
    parts = []
    normalized, texts = memo.normalized, memo.texts
    for c in sorted(alive, key=memo.order.__getitem__):
        n = normalized.get(c)
        if n is None:
            n = normalized[c] = normalize(texts[c])
        if n:
            parts.append(n)
    return " ".join(parts)
