"""Look-ups made once per pair of frames and shared by every call on the same frames.

An evaluation measures resurrection for every system and policy over the units and chunks of
each strategy: the same two frames, again and again. :func:`shared` builds their
:class:`~convlab.resurrection.layout.Layout` and the chunks' texts, conversation order and
normalised texts once and keeps them while both frames live (weak references: nothing is kept
alive by the memo, and a frame gone cannot be mistaken for a new one at the same address).
Frames are never mutated in convlab (each stage returns a new one), which is what makes a
frame's identity a valid key.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import polars as pl

from convlab.resurrection.layout import Layout

__all__ = ["Shared", "context_text", "shared"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Shared:
    """What every measurement over one units frame and one chunks frame reads.

    Attributes:
        layout: the units and chunks as look-ups.
        doc_chunks: doc id -> the set of its chunk ids.
        texts: chunk id -> its text.
        order: chunk id -> its place in conversation order.
        normalized: chunk id -> its normalised text (filled as chunks come back).
    """

    layout: Layout
    doc_chunks: dict[str, set[str]]
    texts: dict[str, str]
    order: dict[str, int]
    normalized: dict[str, str] = field(default_factory=dict)


_MEMO: dict[tuple[int, int], tuple[weakref.ref[pl.DataFrame], weakref.ref[pl.DataFrame], Shared]]
_MEMO = {}


def shared(units: pl.DataFrame, chunks: pl.DataFrame) -> Shared:
    """The :class:`Shared` look-ups of ``units`` over ``chunks``, made once per pair of frames.

    Raises:
        ValueError: as :meth:`Layout.of`.
    """
    key = (id(units), id(chunks))
    hit = _MEMO.get(key)
    if hit is not None and hit[0]() is units and hit[1]() is chunks:
        return hit[2]
    layout = Layout.of(units, chunks)
    made = Shared(
        layout=layout,
        doc_chunks={d: set(cs) for d, cs in layout.doc_chunks.items()},
        texts=dict(chunks.select("chunk_id", "text").iter_rows()),
        # conversation order, so an answer spanning two adjacent chunks is found in the context
        order={
            c: i
            for i, c in enumerate(chunks.sort("conversation_id", "position")["chunk_id"].to_list())
        },
    )
    for k in [k for k, (u, c, _) in _MEMO.items() if u() is None or c() is None]:
        del _MEMO[k]  # frames gone: their look-ups go too
    _MEMO[key] = (weakref.ref(units), weakref.ref(chunks), made)
    return made


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
