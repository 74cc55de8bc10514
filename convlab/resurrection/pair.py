"""``pair``: the hit's doc and its paired question or answer doc."""

from __future__ import annotations

from dataclasses import dataclass

from convlab.protocols import Layout
from convlab.resurrection.policies import POLICIES

__all__ = ["PairPolicy", "paired_doc"]


def paired_doc(doc: str, layout: Layout) -> str | None:
    """The doc paired with ``doc``: its question if it is an answer, its answer if a question.

    - A turn doc (chats): None, the turn holds its question and its answer already.
    - A ``user`` message (the first speaker: a question): the first ``assistant`` message after
      it in its turn (its answer); if it has none (a user message that closes a conversation),
      the last ``assistant`` message of the previous turn (the one it replies to); else None.
    - An ``assistant`` message (the second speaker: an answer): the last ``user`` message before
      it in its turn (its question); else None (a preamble before the first user message).
    - ``system`` and ``tool`` messages: None.

    Messages are docs with at least one chunk; turns are as :func:`convlab.turns` made them.
    """
    if layout.doc_kind[doc] != "message":
        return None
    conv, i = layout.doc_place[doc]
    docs = layout.conversation_docs[conv]
    role, turn = layout.doc_role[doc], layout.doc_turn[doc]
    if role == "user":
        for d in docs[i + 1 :]:
            if layout.doc_turn[d] != turn:
                break
            if layout.doc_role[d] == "assistant":
                return d
        for d in reversed(docs[:i]):
            if layout.doc_turn[d] < turn - 1:
                break
            if layout.doc_turn[d] == turn - 1 and layout.doc_role[d] == "assistant":
                return d
        return None
    if role == "assistant":
        for d in reversed(docs[:i]):
            if layout.doc_turn[d] != turn:
                break
            if layout.doc_role[d] == "user":
                return d
    return None


@POLICIES.register("pair")
@dataclass(frozen=True, slots=True, kw_only=True)
class PairPolicy:
    """Bring back the hit's doc and its paired doc (:func:`paired_doc`).

    What comes back: one piece, the chunks of the hit's doc and of its paired doc, in
    conversation order (the question before its answer). In chats, where docs are turns, the
    turn alone (:class:`~convlab.resurrection.doc.DocPolicy`). Cost: the tokens of those chunks
    not already in the context; both fit or the hit is skipped.

    Example:
        >>> PairPolicy().name
        'pair'
    """

    name = "pair"

    def pieces(self, unit_id: str, doc_id: str | None, layout: Layout) -> list[list[str]]:
        """One piece: the doc and its pair."""
        docs: list[str] = []
        for d in layout.hit_docs(unit_id, doc_id):
            if d not in layout.doc_place:
                raise ValueError(f"doc {d!r} has no chunk in the chunks frame")
            docs.append(d)
            other = paired_doc(d, layout)
            if other is not None:
                docs.append(other)
        return [layout.chunks_of_docs(docs)]
