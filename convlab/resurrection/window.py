"""``window``: the hit's doc with ``n`` neighbouring docs on each side (like ``center_on``)."""

from __future__ import annotations

from dataclasses import dataclass

from convlab.protocols import Layout
from convlab.resurrection.policies import POLICIES

__all__ = ["WindowPolicy"]


@POLICIES.register("window")
@dataclass(frozen=True, slots=True, kw_only=True)
class WindowPolicy:
    """Bring back the hit's doc and the ``n`` docs before and after it in its conversation.

    What comes back: one piece, the chunks of docs ``i - n .. i + n`` of the conversation's docs
    (turns or messages, by ``doc_kind``; fewer at its start and end), ``i`` the hit's doc, in
    conversation order. ``n = 0`` is :class:`~convlab.resurrection.doc.DocPolicy`. Cost: the
    tokens of those chunks not already in the context; the window fits whole or the hit is
    skipped.

    Args:
        n: neighbouring docs on each side.

    Raises:
        ValueError: ``n`` negative or not an int.

    Example:
        >>> WindowPolicy(n=2).n
        2
    """

    name = "window"
    n: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 0:
            raise ValueError(f"window n must be an int >= 0, got {self.n!r}")

    def pieces(self, unit_id: str, doc_id: str | None, layout: Layout) -> list[list[str]]:
        """One piece: the window's chunks."""
        docs: list[str] = []
        for d in layout.hit_docs(unit_id, doc_id):
            if d not in layout.doc_place:
                raise ValueError(f"doc {d!r} has no chunk in the chunks frame")
            conv, i = layout.doc_place[d]
            around = layout.conversation_docs[conv]
            docs += around[max(0, i - self.n) : i + self.n + 1]
        return [layout.chunks_of_docs(docs)]
