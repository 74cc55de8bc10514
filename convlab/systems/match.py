"""What matched inside each hit: the best message of its doc, by the system's own scoring.

A doc is a turn in chats, and an agent's turn can hold hundreds of messages; the unit a hit
carries is the best unit of the view that ranked the doc best, which may be another message of
the turn than the one that answers. :func:`with_matches` ranks the *messages* of each hit's doc
as the system ranks docs: each view scores the doc's units (the same retrievers, restricted to
the doc's rows and the search's filters), a message takes its best unit's score in each view
(best per doc, one level down), a hybrid view fuses its dense and BM25 rankings by its fusion
method and a fused system fuses its views' rankings with its own method, weights and
parameters (:func:`convlab.fusion.fuse_carrying`, per hit doc). The first message is the hit's
match, with the unit that ranked it best.

In dialogs a doc is a message, so its match is that message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from convlab import schema
from convlab.fusion import fuse_carrying

if TYPE_CHECKING:
    from convlab.protocols import Query
    from convlab.retrieval.search import Searcher
    from convlab.systems.system import System

__all__ = ["MATCH_COLUMNS", "with_matches"]

MATCH_COLUMNS: schema.Schema = {
    "match_unit_id": pl.String,  # the unit that ranked the message best
    "match_message_index": pl.Int32,  # the doc's best message
    "match_chunk_ids": pl.List(pl.String),  # that unit's chunks
}
"""The columns :func:`with_matches` adds to hits."""

_SEP = "\x1f"  # between a query id and a doc id in the per-doc rankings' query_id
_CARRIED = ("unit_id", "message_index", "chunk_ids")


def with_matches(
    hits: pl.DataFrame,
    system: System,
    searchers: Sequence[Searcher],
    queries: dict[str, Query],
) -> pl.DataFrame:
    """``hits`` with the best message of each hit's doc and its unit (:data:`MATCH_COLUMNS`).

    Args:
        hits: a system's hits (:data:`convlab.schema.HITS`).
        system: the system that found them (its options applied).
        searchers: each view's searcher, in the system's view order (what found the hits).
        queries: each ``query_id``'s query (text and vector) as the searchers embedded it.

    Returns:
        ``hits`` and :data:`MATCH_COLUMNS`; a doc none of whose units scores keeps its hit's
        unit and message.
    """
    if hits.height == 0:
        return hits.with_columns(pl.lit(None, dtype=d).alias(c) for c, d in MATCH_COLUMNS.items())
    per_view = [_view_ranking(s, hits, queries) for s in searchers]
    if len(per_view) > 1 and system.fused:
        ranked = fuse_carrying(
            per_view, system.weights, method=system.fusion, **system.fusion_params
        )
    else:
        ranked = per_view[0]
    best = (
        ranked.filter(pl.col("rank") == 1)
        .with_columns(pl.col("query_id").str.split_exact(_SEP, 1).alias("_key"))
        .unnest("_key")
        .select(
            pl.col("field_0").alias("query_id"),
            pl.col("field_1").alias("doc_id"),
            pl.col("unit_id").alias("match_unit_id"),
            pl.col("message_index").cast(pl.Int32).alias("match_message_index"),
            pl.col("chunk_ids").alias("match_chunk_ids"),
        )
    )
    out = hits.join(best, on=["query_id", "doc_id"], how="left")
    return out.with_columns(
        pl.col("match_unit_id").fill_null(pl.col("unit_id")),
        pl.col("match_message_index").fill_null(pl.col("message_index")),
        pl.col("match_chunk_ids").fill_null(pl.col("chunk_ids")),
    )


def _view_ranking(
    searcher: Searcher, hits: pl.DataFrame, queries: dict[str, Query]
) -> pl.DataFrame:
    """One view's ranking of the messages of every hit doc: a run per (query, doc).

    Each retriever of the view scores the doc's rows that pass the search's filters; a message
    takes its best unit's score; a view of two retrievers (hybrid) fuses them by its method.
    """
    per_query = [
        (qid, *_doc_rows(searcher, docs))
        for qid, docs in hits.group_by("query_id", maintain_order=True).agg("doc_id").iter_rows()
    ]
    runs = []
    for retriever in searcher.retrievers:  # each scores the same rows (hybrid: dense and BM25)
        parts = []
        for qid, rows, doc_of in per_query:
            if rows.size == 0:
                continue
            found = retriever.search(queries[qid], int(rows.size), rows)
            parts.append(_per_message(searcher, qid, found.rows, found.scores, doc_of))
        runs.append(pl.concat(parts) if parts else _empty_run())
    if len(runs) == 1:
        return runs[0]
    options = searcher.options.retrieval
    return fuse_carrying(runs, method=options.fusion, **options.fusion_params)


def _doc_rows(searcher: Searcher, docs: Sequence[str]) -> tuple[np.ndarray, dict[int, str]]:
    """The rows of ``docs``' units that pass the searcher's filters, and each row's hit doc."""
    wanted = set(docs)
    convs = dict.fromkeys(d.rsplit(":", 1)[0] for d in docs)
    doc_of: dict[int, str] = {}
    for conv in convs:
        for row in searcher.by_conv.get(conv, np.zeros(0, np.int64)).tolist():
            if not searcher.mask[row]:
                continue
            for d in searcher.doc_ids[row]:
                if d in wanted:
                    doc_of[row] = d
                    break
    return np.fromiter(sorted(doc_of), dtype=np.int64, count=len(doc_of)), doc_of


def _per_message(
    searcher: Searcher, qid: str, rows: np.ndarray, scores: np.ndarray, doc_of: dict[int, str]
) -> pl.DataFrame:
    """Scored rows as a run: per hit doc, each message's best unit, ranked."""
    units = searcher.units[rows].select(_CARRIED)
    found = units.with_columns(
        pl.Series("query_id", [f"{qid}{_SEP}{doc_of[int(r)]}" for r in rows], dtype=pl.String),
        pl.Series("score", scores, dtype=pl.Float64),
        pl.Series("_order", np.arange(rows.size)),
    ).with_columns(pl.col("message_index").cast(pl.String).alias("doc_id"))
    best = (
        found.sort("score", "_order", descending=[True, False])
        .unique(["query_id", "doc_id"], keep="first", maintain_order=True)
        .with_columns(pl.int_range(1, pl.len() + 1).over("query_id").cast(pl.Int32).alias("rank"))
    )
    return best.select("query_id", "doc_id", "score", "rank", *_CARRIED)


def _empty_run() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "query_id": pl.String,
            "doc_id": pl.String,
            "score": pl.Float64,
            "rank": pl.Int32,
            "unit_id": pl.String,
            "message_index": pl.Int32,
            "chunk_ids": pl.List(pl.String),
        }
    )
