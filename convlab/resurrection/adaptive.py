"""``adaptive``: per hit, by its doc's length, a window, the pair or the doc alone."""

from __future__ import annotations

from dataclasses import dataclass

from convlab.protocols import Layout
from convlab.resurrection.pair import paired_doc
from convlab.resurrection.policies import POLICIES

__all__ = ["AdaptivePolicy"]


@POLICIES.register("adaptive")
@dataclass(frozen=True, slots=True, kw_only=True)
class AdaptivePolicy:
    """Bring back, for each hit, what its doc's length says it needs.

    A short doc ("Yes, that one!") carries its meaning in its neighbours; a long one holds its
    own context, and a window around it would spend the budget on what the hit does not need.
    Per doc the hit stands for (its tokens: the sum of its chunks' ``n_tokens``):

    - fewer than ``short`` tokens: the window of ``n`` docs on each side (as ``window``);
    - ``short`` up to ``long`` tokens (``long`` excluded): the doc and its paired question or
      answer (as ``pair``; in chats, where docs are turns, the turn alone);
    - ``long`` tokens or more: the doc alone (as ``doc``);
    - with ``cap`` > 0, ``cap`` tokens or more: the hit's unit alone (as ``unit``: what was
      embedded, within the model's 256 tokens), where even the doc would spend the budget on
      one hit (a chat turn with a long reply). ``cap = 0``: never.

    One piece, every chunk once, in conversation order; it fits whole or the hit is skipped.
    The thresholds are the policy's parameters (``adaptive:short=32:long=128``): fixed in
    advance, or chosen among such specs by cross-validation on training folds only, as every
    cell of the policy grid is (:mod:`convlab.studies.policy_cv`).

    Args:
        short: a doc of fewer tokens takes its window.
        long: a doc of at least this many tokens comes back alone.
        n: the window's docs on each side.
        cap: a doc of at least this many tokens gives the unit alone (0: never).

    Raises:
        ValueError: a parameter that is not an int >= 0, ``long`` below ``short``, or a
            ``cap`` (not 0) below ``long``.

    Example:
        >>> AdaptivePolicy(short=8, long=32)
        AdaptivePolicy(short=8, long=32, n=1, cap=0)
    """

    name = "adaptive"
    short: int = 20
    long: int = 60
    n: int = 1
    cap: int = 0

    def __post_init__(self) -> None:
        for key in ("short", "long", "n", "cap"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"adaptive {key} must be an int >= 0, got {value!r}")
        if self.long < self.short:
            raise ValueError(f"adaptive long ({self.long}) must not be below short ({self.short})")
        if self.cap and self.cap < self.long:
            raise ValueError(f"adaptive cap ({self.cap}) must be 0 or not below long ({self.long})")

    def docs_for(self, doc: str, layout: Layout) -> list[str]:
        """The docs one hit doc brings back, by its length."""
        size = self._size(doc, layout)
        if size >= self.long:
            return [doc]
        if size >= self.short:
            other = paired_doc(doc, layout)
            return [doc] if other is None else [doc, other]
        conv, i = layout.doc_place[doc]
        return layout.conversation_docs[conv][max(0, i - self.n) : i + self.n + 1]

    def pieces(self, unit_id: str, doc_id: str | None, layout: Layout) -> list[list[str]]:
        """One piece: the chunks of every hit doc's choice (the unit's for a capped doc)."""
        hits = layout.hit_docs(unit_id, doc_id)
        if self.cap and any(self._size(d, layout) >= self.cap for d in hits):
            return [layout.unit_chunks[unit_id]]
        docs = [d for hit in hits for d in self.docs_for(hit, layout)]
        return [layout.chunks_of_docs(docs)]

    @staticmethod
    def _size(doc: str, layout: Layout) -> int:
        """The doc's tokens."""
        if doc not in layout.doc_place:
            raise ValueError(f"doc {doc!r} has no chunk in the chunks frame")
        return sum(layout.tokens[c] for c in layout.doc_chunks[doc])
