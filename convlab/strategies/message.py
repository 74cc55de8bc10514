"""``message``: each message embedded whole (windowed with overlap when it exceeds the budget).

The classic memory baseline: one utterance, one vector (on LoCoMo, "each utterance embedded
alone"). Windows follow ``whole_turn``'s overlap rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from convlab.strategies.base import Chunk, Unit, register_strategy, windows_per


@register_strategy
class Message:
    """Each message alone."""

    name = "message"

    def units(self, chunks: Sequence[Chunk], *, max_tokens: int) -> list[Unit]:
        """Windows per message."""
        return windows_per(self.name, chunks, max_tokens, level="message", with_target=True)
