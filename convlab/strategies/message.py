"""``message``: each message embedded whole (windowed with overlap when it exceeds the budget).

The classic memory baseline: one utterance, one vector (on LoCoMo, "each utterance embedded
alone"). Windows follow ``whole_turn``'s overlap rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import Any

from convlab.strategies.base import Chunk, doc_ids_for, make_unit, register_strategy, windows

OVERLAP = 0.25


@register_strategy
class Message:
    """Each message alone."""

    name = "message"

    def units(self, chunks: Sequence[Chunk], *, budget: int, dialog: bool) -> list[dict[str, Any]]:
        """Windows per message (per role part of a message, in order)."""
        out = []
        for _, group in groupby(chunks, key=lambda c: c.message_index):
            msg = list(group)
            for i, win in enumerate(windows(msg, budget, OVERLAP)):
                out.append(
                    make_unit(
                        self.name,
                        f"{self.name}:{msg[0].message_id}:w{i}",
                        win,
                        target=win[0],
                        doc_ids=doc_ids_for(win, dialog),
                    )
                )
        return out
