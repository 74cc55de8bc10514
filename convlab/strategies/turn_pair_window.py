"""``turn_pair_window``: ``turn_pair`` bounded on long replies, a window with its pair.

The targets are ``isolated_window``'s (:func:`convlab.strategies.base.message_windows`: a
message's sentences packed into windows of at most half the unit's limit, no overlap); each
window is embedded as ``turn_pair`` embeds a chunk (:func:`convlab.strategies.turn_pair.partners`):
with the paired S0 of the other role (in dialogs, the first sentence of the utterance it answers
or that answers it), then its own role's S0, each when it fits the limit and the window does not
hold it already. System and tool windows embed alone. The window's first chunk is the unit's
target; its docs are the window's. A one-sentence reply is the same unit as ``turn_pair``'s.
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
from convlab.strategies.turn_pair import partners


@register_strategy
class TurnPairWindow:
    """A window of a message's sentences + the paired S0 + the own role's S0."""

    name = "turn_pair_window"

    def units(self, chunks: Sequence[Chunk], *, max_tokens: int) -> list[Unit]:
        """One unit per window, with its conversational partners that fit."""
        context = partners(chunks)
        return [
            make_unit(
                self.name,
                f"{self.name}:{w[0].chunk_id}",
                pack_window(w, context(w[0]), max_tokens),
                target=w[0],
                doc_ids=doc_ids_for(w),
            )
            for w in message_windows(chunks, max_tokens)
        ]
