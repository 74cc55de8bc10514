"""``qa_pair``: the question and the answer of each exchange, chunked independently.

The question side is the user's chunks of a turn; the answer side is everything else the turn
holds (assistant text, tool calls, and tool results or system text when the policy keeps them).
Each side is cut into windows like ``whole_turn`` (25% overlap); every unit knows its side and
takes its first chunk as target. In dialogs the exchange is an utterance (run) and its reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from convlab.strategies.base import Chunk, Unit, register_strategy, window_units


@register_strategy
class QAPair:
    """Question and answer chunked apart."""

    name = "qa_pair"

    def units(self, chunks: Sequence[Chunk], *, max_tokens: int) -> list[Unit]:
        """Windows per side per turn."""
        out = []
        for _, group in groupby(chunks, key=lambda c: c.turn_index):
            turn = list(group)
            for side in ("question", "answer"):
                part = [c for c in turn if (c.role == "user") == (side == "question")]
                prefix = f"{self.name}:{turn[0].turn_id}:{side[0]}"
                out += window_units(
                    self.name, prefix, part, max_tokens, with_target=True, side=side
                )
        return out
