"""Turns: a real user message and everything up to the next real one.

Rules, applied per conversation in message order:

- A turn starts at a real user message (``messages.is_real_user``). Sidechains are
  conversations of their own (a sub-agent's turns start at the prompt its parent gave it), so
  ``is_sidechain`` plays no part here.
- A real user message with no assistant reply before the next real one joins the next turn (an
  interrupted prompt), so every turn but the last has at least one assistant reply.
- Messages before the first real user message (a system prompt, injected context) join turn 0.
- The last turn, when it has no assistant reply yet, is kept and flagged ``is_complete=False``.
- A conversation with no real user message has no turns; its messages get no turn (they are
  counted by :func:`turn_report`).

Two-speaker dialogs (``conversations.kind == "dialog"``, e.g. LoCoMo) follow the same rule: the
first speaker is role ``user`` with ``is_real_user=True``, so a turn is a first-speaker utterance
(or a run of them) and the second speaker's utterances that follow it. Retrieval in dialogs is
judged per message, not per turn (see :mod:`convlab.schema`).
"""

from __future__ import annotations

import polars as pl

from convlab import schema
from convlab.loaders.corpus import Corpus

__all__ = ["message_turns", "turn_report", "turns"]


def message_turns(corpus: Corpus) -> pl.DataFrame:
    """The turn of every message: ``conversation_id, message_index, turn_index`` (null: none).

    Vectorised: a turn boundary is a real user message that has an assistant reply after it and
    before the next real user message, or the last real user message of the conversation.
    """
    m = corpus.messages.sort("conversation_id", "message_index").select(
        "conversation_id",
        "message_index",
        "role",
        pl.col("is_real_user").alias("real"),
    )
    # segment = number of real user messages seen so far (0 before the first)
    m = m.with_columns(pl.col("real").cast(pl.Int32).cum_sum().over("conversation_id").alias("seg"))
    seg = m.group_by("conversation_id", "seg").agg(
        (pl.col("role") == "assistant").any().alias("answered")
    )
    last = m.group_by("conversation_id").agg(pl.col("seg").max().alias("last_seg"))
    seg = seg.join(last, on="conversation_id").sort("conversation_id", "seg")
    # a segment > 0 opens a turn if answered, or if it is the last one (incomplete turn);
    # unanswered earlier segments join the next turn. Segment 0 (preamble) joins turn 0.
    seg = seg.with_columns(
        ((pl.col("seg") > 0) & (pl.col("answered") | (pl.col("seg") == pl.col("last_seg")))).alias(
            "closes"
        )
    )
    # turn of a segment = number of closing segments before it (an unanswered one belongs to
    # the turn that the next closing segment forms)
    seg = seg.with_columns(
        (
            pl.col("closes").cast(pl.Int32).cum_sum().over("conversation_id")
            - pl.col("closes").cast(pl.Int32)
        ).alias("turn_index")
    )
    seg = seg.with_columns(
        pl.when(pl.col("last_seg") == 0)
        .then(None)
        .otherwise(pl.col("turn_index"))
        .cast(pl.Int32)
        .alias("turn_index")
    )
    return (
        m.join(seg.select("conversation_id", "seg", "turn_index"), on=["conversation_id", "seg"])
        .select("conversation_id", "message_index", "turn_index")
        .sort("conversation_id", "message_index")
    )


def turns(corpus: Corpus) -> pl.DataFrame:
    """One row per turn (:data:`convlab.schema.TURNS`).

    Example:
        >>> t = turns(convlab.load("data/sample"))  # doctest: +SKIP
        >>> t.filter(~pl.col("is_complete")).height  # doctest: +SKIP
    """
    mt = message_turns(corpus).filter(pl.col("turn_index").is_not_null())
    if mt.height == 0:
        return schema.empty(schema.TURNS)
    m = mt.join(
        corpus.messages.select(
            "conversation_id", "message_index", "role", "timestamp", "is_real_user"
        ),
        on=["conversation_id", "message_index"],
    )
    out = (
        m.group_by("conversation_id", "turn_index")
        .agg(
            pl.col("message_index").min().alias("first_message_index"),
            pl.col("message_index").max().alias("last_message_index"),
            pl.len().cast(pl.Int32).alias("n_messages"),
            pl.col("timestamp").filter(pl.col("is_real_user")).min().alias("started_at"),
            pl.col("timestamp").min().alias("first_time"),
            ((pl.col("role") == "assistant").any() & pl.col("is_real_user").any()).alias(
                "is_complete"
            ),
        )
        .with_columns(
            pl.coalesce("started_at", "first_time").alias("started_at"),
            schema.turn_id_expr(),
        )
        .sort("conversation_id", "turn_index")
    )
    return out.select([pl.col(c).cast(t) for c, t in schema.TURNS.items()])


def turn_report(corpus: Corpus) -> dict[str, int]:
    """Counts: turns, incomplete turns, messages in no turn, conversations with no turn."""
    mt = message_turns(corpus)
    t = turns(corpus)
    no_turn = mt.filter(pl.col("turn_index").is_null())
    return {
        "turns": t.height,
        "incomplete_turns": t.filter(~pl.col("is_complete")).height,
        "messages_in_no_turn": no_turn.height,
        "conversations_without_turns": no_turn["conversation_id"].n_unique(),
    }
