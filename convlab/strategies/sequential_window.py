"""``sequential_window``: ``sequential`` bounded on long messages, a window with its neighbours.

The targets are ``isolated_window``'s (:func:`convlab.strategies.base.message_windows`: a
message's sentences packed into windows of at most half the unit's limit, no overlap); each
window is embedded with the chunk before its first and the chunk after its last, whatever their
role or turn, when they fit the limit (N-1 first, then N+1, as ``sequential``). The window's
first chunk is the unit's target; its docs are the window's, never a neighbour's.
"""

from __future__ import annotations

from collections.abc import Sequence

from convlab.strategies.base import (
    Chunk,
    Unit,
    doc_ids_for,
    make_unit,
    message_windows,
    pack_window,
    register_strategy,
)


@register_strategy
class SequentialWindow:
    """A window of a message's sentences, N-1 and N+1 up to the limit."""

    name = "sequential_window"

    def units(self, chunks: Sequence[Chunk], *, max_tokens: int) -> list[Unit]:
        """One unit per window, with the neighbours that fit."""
        where = {c.chunk_id: i for i, c in enumerate(chunks)}
        out = []
        for w in message_windows(chunks, max_tokens):
            first, last = where[w[0].chunk_id], where[w[-1].chunk_id]
            prev = chunks[first - 1] if first > 0 else None
            nxt = chunks[last + 1] if last + 1 < len(chunks) else None
            out.append(
                make_unit(
                    self.name,
                    f"{self.name}:{w[0].chunk_id}",
                    pack_window(w, [prev, nxt], max_tokens),
                    target=w[0],
                    doc_ids=doc_ids_for(w),
                )
            )
        return out
