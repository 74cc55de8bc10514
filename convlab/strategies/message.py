"""``message``: each message embedded whole (windowed with overlap when it exceeds the budget).

The classic memory baseline: one utterance, one vector (on LoCoMo, "each utterance embedded
alone"). Windows follow ``whole_turn``'s overlap rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from convlab.strategies.base import Chunk, Unit, register_strategy, window_units


@register_strategy
class Message:
    """Each message alone."""

    name = "message"

    def units(self, chunks: Sequence[Chunk], *, max_tokens: int) -> list[Unit]:
        """Windows per message."""
        out = []
        for _, group in groupby(chunks, key=lambda c: c.message_index):
            msg = list(group)
            prefix = f"{self.name}:{msg[0].message_id}:w"
            out += window_units(self.name, prefix, msg, max_tokens, with_target=True)
        return out
