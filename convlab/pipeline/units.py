"""``units``: what gets embedded, built by a registered strategy from the sentences frame."""

from __future__ import annotations

from collections.abc import Collection

import polars as pl

from convlab import schema
from convlab.strategies import get_strategy
from convlab.strategies.base import Chunk

__all__ = ["units"]


def units(
    sentences: pl.DataFrame,
    strategy: str,
    budget: int = 256,
    *,
    conversations: pl.DataFrame | None = None,
    dialogs: Collection[str] | None = None,
) -> pl.DataFrame:
    """One row per unit (:data:`convlab.schema.UNITS`) of ``strategy`` over ``sentences``.

    Args:
        sentences: a :data:`convlab.schema.SENTENCES` frame.
        strategy: a key of :data:`convlab.STRATEGIES`.
        budget: tokens the model may see per unit, [CLS] and [SEP] included (at most 256).
        conversations: the corpus's conversations; those of ``kind == "dialog"`` are dialogs.
        dialogs: conversation ids to treat as two-speaker dialogs (instead of ``conversations``).

    Raises:
        ValueError: an unknown strategy (listing the valid ones) or a budget that cannot hold
            one chunk of 254 tokens.

    Example:
        >>> u = units(sents, "turn_pair", conversations=corpus.conversations)  # doctest: +SKIP
    """
    impl = get_strategy(strategy)
    if not 8 <= budget <= 256:
        raise ValueError("budget must be between 8 and 256 tokens")
    dialog_ids: set[str] = set(dialogs or ())
    if conversations is not None:
        dialog_ids |= set(
            conversations.filter(pl.col("kind") == "dialog")["conversation_id"].to_list()
        )
    s = sentences.sort("conversation_id", "position")
    too_big = s.filter(pl.col("n_tokens") + 2 > budget)
    if too_big.height:
        raise ValueError(
            f"{too_big.height} chunks do not fit a budget of {budget} tokens alone "
            f"(largest {too_big['n_tokens'].max()!s} + 2); raise the budget"
        )
    rows = []
    names = [c for c in Chunk.__slots__ if c in s.columns]
    for (cid,), part in s.group_by("conversation_id", maintain_order=True):
        chunks = [Chunk(**r) for r in part.select(names).iter_rows(named=True)]
        rows.extend(impl.units(chunks, budget=budget, dialog=cid in dialog_ids))
    return schema.frame(rows, schema.UNITS)
