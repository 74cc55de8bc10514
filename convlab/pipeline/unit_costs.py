"""What each strategy's units cost: units, units per message, distinct texts, tokens embedded.

Read from the units a build made and the chunks they were made from; nothing is embedded or
timed here. ``tokens_embedded`` is what the model sees ([CLS] and [SEP] included, as
``units.n_tokens`` counts them) when each distinct text of the strategy is embedded once; the
row ``all`` counts the distinct texts of every embedded strategy together, which is what one
build embeds (:func:`convlab.build.build_indexes` embeds a text two strategies share once).
A strategy searched by BM25 alone embeds nothing: its ``tokens_embedded`` is 0.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from convlab.loaders import Corpus
    from convlab.pipeline.policy import ContentPolicy

__all__ = ["UNIT_COSTS", "corpus_unit_costs", "messages_with_text", "unit_costs"]

UNIT_COSTS: dict[str, pl.DataType | type[pl.DataType]] = {
    "strategy": pl.String,
    "units": pl.Int64,
    "units_per_message": pl.Float64,
    "distinct_texts": pl.Int64,
    "tokens_embedded": pl.Int64,
}
"""The columns of :func:`unit_costs`' frame."""


def messages_with_text(chunks: pl.DataFrame) -> int:
    """The messages that gave at least one chunk: the denominator of units per message."""
    return chunks.select("conversation_id", "message_index").n_unique() if chunks.height else 0


def unit_costs(
    units: Mapping[str, pl.DataFrame],
    messages: int,
    *,
    dense: Collection[str] | None = None,
    total: str = "all",
) -> pl.DataFrame:
    """One row per strategy (:data:`UNIT_COSTS`), then the row ``total``.

    The row ``total`` counts every strategy's units, and the distinct texts and tokens of the
    embedded strategies together: what one build embeds.

    Args:
        units: a units frame (``text``, ``n_tokens``) per strategy, in the order of the rows.
        messages: the messages the units were made from (:func:`messages_with_text`).
        dense: the strategies whose units are embedded (None: all of them).
        total: the name of the last row.

    Example:
        Two units of one text and one of another, over two messages:

        >>> u = pl.DataFrame({"text": ["a b", "a b", "c"], "n_tokens": [4, 4, 3]})
        >>> unit_costs({"s": u}, 2).rows()
        [('s', 3, 1.5, 2, 7), ('all', 3, 1.5, 2, 7)]
    """
    embedded = set(units if dense is None else dense)
    rows = []
    for name, frame in units.items():
        texts = frame.select("text", "n_tokens").unique("text")
        rows.append(_row(name, frame.height, messages, texts, name in embedded))
    parts = [f.select("text", "n_tokens") for n, f in units.items() if n in embedded]
    every = pl.concat(parts).unique("text") if parts else pl.DataFrame({"text": [], "n_tokens": []})
    count = sum(f.height for f in units.values())
    rows.append(_row(total, count, messages, every, True))
    return pl.DataFrame(rows, schema=UNIT_COSTS, orient="row")


def _row(name: str, units: int, messages: int, texts: pl.DataFrame, dense: bool) -> tuple:
    tokens = int(texts["n_tokens"].sum()) if dense and texts.height else 0
    per_message = units / messages if messages else 0.0
    return (name, units, per_message, texts.height, tokens)


def corpus_unit_costs(
    corpus: Corpus, strategies: Sequence[str], *, policy: ContentPolicy | None = None
) -> pl.DataFrame:
    """:func:`unit_costs` of ``strategies`` over ``corpus``, nothing embedded, per assistant too.

    The corpus is chunked once; the column ``units_per_assistant_message`` adds each strategy's
    units whose target is an assistant chunk per assistant message with text (a long reply's
    cost; 0 for ``whole_turn``, whose units have no target; null on the last row).

    Raises:
        ValueError: an unknown strategy, listing the valid ones.
    """
    from convlab.pipeline.chunks import chunks as make_chunks
    from convlab.pipeline.policy import ContentPolicy
    from convlab.pipeline.units import units as make_units

    chunks = make_chunks(corpus, policy or ContentPolicy())
    units = {s: make_units(chunks, s) for s in strategies}
    replies = messages_with_text(chunks.filter(pl.col("role") == "assistant"))
    per_reply = [
        u.filter(pl.col("role") == "assistant").height / replies if replies else 0.0
        for u in units.values()
    ]
    return unit_costs(units, messages_with_text(chunks)).with_columns(
        pl.Series("units_per_assistant_message", [*per_reply, None], dtype=pl.Float64)
    )
