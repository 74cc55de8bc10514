"""``sequential``: the target with its neighbours N-1 and N+1, as many as fit (the old strategy).

Neighbours are the previous and next chunks of the same conversation, whatever their role or
turn. Preference when both do not fit: N-1 first (what led to the chunk), then N+1.
"""

from __future__ import annotations

from collections.abc import Sequence

from convlab.strategies.base import Chunk, Unit, doc_ids_for, make_unit, pack, register_strategy


@register_strategy
class Sequential:
    """N-1, N, N+1 up to the budget."""

    name = "sequential"

    def units(self, chunks: Sequence[Chunk], *, max_tokens: int) -> list[Unit]:
        """One unit per chunk, with the neighbours that fit."""
        out = []
        for i, c in enumerate(chunks):
            prev = chunks[i - 1] if i > 0 else None
            nxt = chunks[i + 1] if i + 1 < len(chunks) else None
            chosen = pack(c, [prev, nxt], max_tokens)
            out.append(
                make_unit(
                    self.name,
                    f"{self.name}:{c.chunk_id}",
                    chosen,
                    target=c,
                    doc_ids=doc_ids_for([c]),
                )
            )
        return out
