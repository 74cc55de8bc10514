"""``units``: what gets embedded, built by a registered strategy from the chunks frame."""

from __future__ import annotations

import polars as pl

from convlab import schema
from convlab.model import MAX_TOKENS, MIN_TOKENS, SPECIAL_TOKENS
from convlab.protocols import Chunk
from convlab.strategies import get_strategy

__all__ = ["units"]


def units(chunks: pl.DataFrame, strategy: str, max_tokens: int = MAX_TOKENS) -> pl.DataFrame:
    """One row per unit (:data:`convlab.schema.UNITS`) of ``strategy`` over ``chunks``.

    The strategy runs once per conversation; what its units' docs are (turns or messages) is
    the conversation's ``doc_kind``, carried on every chunk.

    Args:
        chunks: a :data:`convlab.schema.CHUNKS` frame.
        strategy: a name in :data:`convlab.STRATEGIES`.
        max_tokens: tokens the model may see per unit, [CLS] and [SEP] included
            (:data:`convlab.model.MIN_TOKENS` to :data:`convlab.model.MAX_TOKENS`).

    Raises:
        ValueError: an unknown strategy (listing the valid ones), a ``max_tokens`` that cannot
            hold one chunk of its tokens, a frame that is not a chunks frame, or a conversation
            whose chunks disagree on their doc kind.

    Example:
        >>> u = units(convlab.chunks(corpus), "turn_pair")  # doctest: +SKIP
    """
    impl = get_strategy(strategy)
    if not MIN_TOKENS <= max_tokens <= MAX_TOKENS:
        raise ValueError(f"max_tokens must be between {MIN_TOKENS} and {MAX_TOKENS} tokens")
    names = list(Chunk.__slots__)
    missing = [c for c in names if c not in chunks.columns]
    if missing:
        raise ValueError(f"chunks lacks columns {missing}: pass a frame of convlab.chunks()")
    s = chunks.sort("conversation_id", "position")
    too_big = s.filter(pl.col("n_tokens") + SPECIAL_TOKENS > max_tokens)
    if too_big.height:
        raise ValueError(
            f"{too_big.height} chunks do not fit max_tokens={max_tokens} alone "
            f"(largest {too_big['n_tokens'].max()!s} + {SPECIAL_TOKENS}); raise max_tokens"
        )
    mixed = (
        s.group_by("conversation_id")
        .agg(pl.col("doc_kind").n_unique())
        .filter(pl.col("doc_kind") > 1)
    )
    if mixed.height:
        raise ValueError(
            f"conversations whose chunks disagree on their doc kind: "
            f"{sorted(mixed['conversation_id'].to_list())[:5]}"
        )
    rows = []
    for _, part in s.group_by("conversation_id", maintain_order=True):
        chunk_rows = [Chunk(**r) for r in part.select(names).iter_rows(named=True)]
        rows.extend(impl.units(chunk_rows, max_tokens=max_tokens))
    return schema.frame(rows, schema.UNITS)
