"""What each strategy embeds for one turn: the units, their target and context chunks apart."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from convlab.model import MAX_TOKENS
from convlab.pipeline.units import units as make_units

__all__ = ["turn_anatomy"]


def turn_anatomy(
    chunks: pl.DataFrame,
    turn_id: str,
    strategies: Sequence[str],
    *,
    max_tokens: int = MAX_TOKENS,
) -> pl.DataFrame:
    """One row per unit of the turn and strategy: target text, context texts, tokens.

    Args:
        chunks: the chunks frame (:func:`convlab.pipeline.chunks.chunks`).
        turn_id: ``"{conversation_id}:t{turn_index}"``.
        strategies: strategy names.
        max_tokens: the unit's token limit.

    Raises:
        ValueError: no such turn in ``chunks``.
    """
    conv, _, turn = turn_id.rpartition(":t")
    part = chunks.filter(pl.col("conversation_id") == conv)
    if part.filter(pl.col("turn_index") == int(turn)).height == 0:
        raise ValueError(f"no turn {turn_id!r} in these chunks")
    text = dict(part.select("chunk_id", "text").iter_rows())
    rows = []
    for name in strategies:
        u = make_units(part, name, max_tokens)
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
