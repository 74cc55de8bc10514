"""``turn_pair``: embed a chunk with its conversational partners.

We resurrect with conversational context, so we embed with it: a chunk is embedded with the
question that prompted it and the opening of the reply. In convlab a turn holds the user's part
and the assistant's part, so the question and its reply are the two parts of one turn:

- assistant chunk: [user S0] + [assistant S0] + [target];
- user chunk: [user S0] + [target] + [assistant S0];
- system and tool chunks: alone;
- a target that is an S0 is not added twice;
- when ``max_tokens`` (256) do not fit: the target first, then the paired S0 of the other role,
  then the own role's S0.

Edge cases: the first turn's user chunks pair forward with its assistant S0;
the last turn, when incomplete, has no assistant part, so its user chunks embed without the
forward pair; a preamble (system prompt) embeds alone.

Conversations whose docs are messages (``doc_kind == "message"``: two-speaker dialogs such as
LoCoMo): every utterance is a message, so an utterance pairs with the other
speaker's utterance it answers (the previous message of the same session when it is the other
speaker's) and the first utterance of a session with the next one. The chunk is embedded with the
paired utterance's first sentence and its own utterance's first sentence. Sessions are told apart
by the message timestamps (LoCoMo dates each session; messages of one session share it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from convlab.strategies.base import (
    Chunk,
    Unit,
    doc_ids_for,
    make_unit,
    pack,
    register_strategy,
    s0_index,
)

__all__ = ["TurnPair", "partners"]

Partners = Callable[[Chunk], tuple[Chunk | None, Chunk | None]]
"""A chunk -> (the paired S0 of the other role or speaker, its own S0), either None."""


def partners(chunks: Sequence[Chunk]) -> Partners:
    """What ``turn_pair`` embeds a chunk of one conversation with, in order of priority.

    Chats: the S0 of the other role and the own role's S0 of the chunk's turn (none for system
    and tool chunks). Dialogs (``doc_kind == "message"``): the first sentence of the utterance
    it answers or that answers it, and its own utterance's first sentence. ``turn_pair_window``
    embeds its windows with the same.
    """
    if chunks and chunks[0].doc_kind == "message":
        return _message_partners(chunks)
    s0 = s0_index(chunks)

    def of(c: Chunk) -> tuple[Chunk | None, Chunk | None]:
        if c.role == "assistant":
            return s0.get((c.turn_index, "user")), s0.get((c.turn_index, "assistant"))
        if c.role == "user":
            return s0.get((c.turn_index, "assistant")), s0.get((c.turn_index, "user"))
        return None, None

    return of


def _message_partners(chunks: Sequence[Chunk]) -> Partners:
    """:func:`partners` where docs are messages: utterances pair with utterances."""
    firsts: dict[int, Chunk] = {}
    for c in chunks:
        if c.sentence_in_message == 0:
            firsts[c.message_index] = c
    order = sorted(firsts)
    where = {m: i for i, m in enumerate(order)}

    def partner(m: int) -> Chunk | None:
        me = firsts[m]
        i = where[m]
        prev = firsts[order[i - 1]] if i > 0 else None
        if prev is not None and prev.timestamp == me.timestamp and prev.role != me.role:
            return prev
        nxt = firsts[order[i + 1]] if i + 1 < len(order) else None
        if nxt is not None and nxt.timestamp == me.timestamp and nxt.role != me.role:
            return nxt
        return None

    pairs = {m: partner(m) for m in order}
    return lambda c: (pairs.get(c.message_index), firsts.get(c.message_index))


@register_strategy
class TurnPair:
    """Target + the paired S0 of the other role + the own role's S0."""

    name = "turn_pair"

    def units(self, chunks: Sequence[Chunk], *, max_tokens: int) -> list[Unit]:
        """One unit per chunk."""
        context = partners(chunks)
        return [
            make_unit(
                self.name,
                f"{self.name}:{c.chunk_id}",
                pack(c, context(c), max_tokens),
                target=c,
                doc_ids=doc_ids_for([c]),
            )
            for c in chunks
        ]
