"""``doc``: the whole utterance or turn a hit stands for."""

from __future__ import annotations

from dataclasses import dataclass

from convlab.protocols import Layout
from convlab.resurrection.policies import POLICIES

__all__ = ["DocPolicy"]


@POLICIES.register("doc")
@dataclass(frozen=True, slots=True, kw_only=True)
class DocPolicy:
    """Bring back the hit's doc whole: its turn in chats, its message in dialogs (``doc_kind``).

    What comes back: one piece, every chunk of the hit's doc (the hit's ``doc_id``; without one,
    every doc of the unit) in conversation order. What the unit was embedded with but lies
    outside the doc (turn_pair's paired S0 in a dialog) does not come back. Cost: the tokens of
    the doc's chunks not already in the context.

    Example:
        >>> DocPolicy().name
        'doc'
    """

    name = "doc"

    def pieces(self, unit_id: str, doc_id: str | None, layout: Layout) -> list[list[str]]:
        """One piece: the doc's chunks."""
        return [layout.chunks_of_docs(layout.hit_docs(unit_id, doc_id))]
