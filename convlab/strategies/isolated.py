"""``isolated``: each chunk embedded alone, the baseline."""

from __future__ import annotations

from collections.abc import Sequence

from convlab.strategies.base import Chunk, Unit, doc_ids_for, make_unit, register_strategy


@register_strategy
class Isolated:
    """Each chunk alone."""

    name = "isolated"

    def units(self, chunks: Sequence[Chunk], *, max_tokens: int) -> list[Unit]:
        """One unit per chunk."""
        return [
            make_unit(
                self.name,
                f"{self.name}:{c.chunk_id}",
                [c],
                target=c,
                doc_ids=doc_ids_for([c]),
            )
            for c in chunks
        ]
