"""``whole_turn``: the whole turn's text; a long turn becomes overlapping windows.

A turn that fits the budget is one unit. A longer turn is cut into windows of whole chunks
(:func:`convlab.strategies.base.windows`), each next window starting with the last chunks of the
previous one holding up to 25% of the budget (with a
256-token model a quarter keeps a sentence or two of context across the cut). Each window is a
unit of the same turn; search keeps a turn's best window. In dialogs a window stands for every
message it contains.
"""

from __future__ import annotations

from collections.abc import Sequence

from convlab.strategies.base import Chunk, Unit, register_strategy, windows_per


@register_strategy
class WholeTurn:
    """The turn's text, windowed with overlap."""

    name = "whole_turn"

    def units(self, chunks: Sequence[Chunk], *, max_tokens: int) -> list[Unit]:
        """Windows per turn."""
        return windows_per(self.name, chunks, max_tokens, level="turn", with_target=False)
