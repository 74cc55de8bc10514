"""What each strategy embeds for one turn: the units, their target and context chunks apart."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from convlab.pipeline.units import units as make_units

__all__ = ["turn_anatomy"]


def turn_anatomy(
    sentences: pl.DataFrame,
    turn_id: str,
    strategies: Sequence[str],
    *,
    conversations: pl.DataFrame | None = None,
    budget: int = 256,
) -> pl.DataFrame:
    """One row per unit of the turn and strategy: target text, context texts, tokens.

    Args:
        sentences: the sentences frame.
        turn_id: ``"{conversation_id}:t{turn_index}"``.
        strategies: strategy names.
        conversations: the corpus's conversations (to know dialogs).
        budget: unit token budget.
    """
    conv, _, turn = turn_id.rpartition(":t")
    part = sentences.filter(pl.col("conversation_id") == conv)
    if part.filter(pl.col("turn_index") == int(turn)).height == 0:
        raise ValueError(f"no turn {turn_id!r} in these sentences")
    text = dict(part.select("chunk_id", "text").iter_rows())
    rows = []
    for name in strategies:
        u = make_units(part, name, budget, conversations=conversations)
        for r in u.filter(pl.col("turn_index") == int(turn)).iter_rows(named=True):
            target = r["target_chunk_id"]
            rows.append(
                {
                    "strategy": name,
                    "unit_id": r["unit_id"],
                    "target": text.get(target, "(the whole window)") if target else "(window)",
                    "context": " | ".join(text[c] for c in r["chunk_ids"] if c != target),
                    "chunks": len(r["chunk_ids"]),
                    "n_tokens": r["n_tokens"],
                }
            )
    return pl.DataFrame(rows)
