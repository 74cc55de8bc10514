"""Hybrid search's fusion: a strategy's dense and BM25 doc rankings fused by :mod:`convlab.fusion`.

Hybrid search is two views of one strategy: the dense view and the BM25 view each rank docs by
their best unit (:class:`~convlab.retrieval.rankers.BestPerDoc`), and :func:`fused_docs` fuses
those doc rankings with :func:`convlab.fusion.fuse_carrying`, the function a system's views are
fused with too (:mod:`convlab.systems.hits`), the batch's queries in one call. The method is
:attr:`RetrievalOptions.fusion <convlab.retrieval.RetrievalOptions.fusion>` (RRF by default). Each
fused doc keeps the unit of the view that ranked it best (ties: the view listed first), so the
rankers after fusion (recency, density, MMR) and the hits read that unit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from convlab.fusion import fuse_carrying
from convlab.protocols import Candidates

__all__ = ["fused_docs"]


def fused_docs(
    views: Sequence[Sequence[Candidates | None]],
    *,
    method: str,
    weights: Sequence[float] | None = None,
    **params: Any,
) -> list[Candidates | None]:
    """Each query's docs, fused over the views by ``method``.

    Args:
        views: ``views[v][q]``: view ``v``'s docs for query ``q``, grouped per doc, best first
            (None: the view found nothing).
        method: a fusion method of :data:`convlab.fusion.FUSIONS`.
        weights: one per view (None: all 1).
        **params: the method's parameters (``k`` for RRF).

    Returns:
        One entry per query: the fused docs, best first, each with the row of the unit of the
        view that ranked it best; None when no view found anything.

    Example:
        dense ranks docs a, b and BM25 ranks b, c: RRF (k 60) gives b 1/62 + 1/61, a 1/61,
        c 1/62; b keeps BM25's unit (its rank 1 there beats its rank 2 in dense).
    """
    n = max((len(v) for v in views), default=0)
    frames = [_run(per_query) for per_query in views]
    out: list[Candidates | None] = [None] * n
    if not any(f.height for f in frames):
        return out
    got = fuse_carrying(frames, weights, method=method, **params).with_columns(
        pl.col("query_id").cast(pl.Int64).alias("q")
    )
    got = got.sort("q", "rank")
    q = got["q"].to_numpy()
    rows, scores, docs = got["row"].to_numpy(), got["score"].to_numpy(), got["doc_id"].to_list()
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]]) if q.size else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], q.size]
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        out[int(q[s])] = Candidates.of(rows[s:e], scores[s:e], docs[s:e])
    return out


def _run(per_query: Sequence[Candidates | None]) -> pl.DataFrame:
    """One view's docs as a run: ``query_id`` (the query's position), doc, score, rank, row."""
    parts = [(q, c) for q, c in enumerate(per_query) if c is not None and len(c)]
    if not parts:
        return pl.DataFrame(
            schema={
                "query_id": pl.String,
                "doc_id": pl.String,
                "score": pl.Float64,
                "rank": pl.Int64,
                "row": pl.Int64,
            }
        )
    return pl.DataFrame(
        {
            "query_id": [str(q) for q, c in parts for _ in range(len(c))],
            "doc_id": [d for _, c in parts for d in c.docs or ()],
            "score": np.concatenate([c.scores for _, c in parts]),
            "rank": np.concatenate([np.arange(1, len(c) + 1) for _, c in parts]),
            "row": np.concatenate([c.rows for _, c in parts]),
        },
        schema_overrides={"rank": pl.Int64, "row": pl.Int64},
    )
