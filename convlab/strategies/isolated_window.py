"""``isolated_window``: ``isolated`` bounded on long messages, a window of sentences embedded alone.

``isolated`` makes one unit per sentence: about 30 for a LongMemEval assistant reply. Here a
message's sentences are packed, in order and without overlap, into windows of at most half the
unit's limit (:func:`convlab.strategies.base.message_windows`: 128 tokens of 256), and each
window is one unit, its first chunk the target (as ``message``'s windows). A message that fits is
one unit; a one-sentence message is the same unit as ``isolated``'s, text and chunk alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from convlab.strategies.base import (
    Chunk,
    Unit,
    doc_ids_for,
    make_unit,
    message_windows,
    register_strategy,
)


@register_strategy
class IsolatedWindow:
    """Each window of a message's sentences alone."""

    name = "isolated_window"

    def units(self, chunks: Sequence[Chunk], *, max_tokens: int) -> list[Unit]:
        """One unit per window."""
        return [
            make_unit(
                self.name, f"{self.name}:{w[0].chunk_id}", w, target=w[0], doc_ids=doc_ids_for(w)
            )
            for w in message_windows(chunks, max_tokens)
        ]
