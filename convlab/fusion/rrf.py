"""Weighted reciprocal rank fusion: the sum over the runs of w / (k + rank).

RRF(d) = Σ_i w_i / (k + rank_i(d)), summed over the runs i that retrieved d (a run that did not
retrieve d adds nothing); rank 1 is a run's best doc, k (60 in the paper) damps the weight of the
top ranks. With every w_i = 1 this is Cormack, Clarke & Buettcher, "Reciprocal rank fusion
outperforms Condorcet and individual rank learning methods", SIGIR 2009; the per-run weights w_i
let a stronger run count more (and w_i = 0 leaves run i out).

Ranks come from each run's ``rank`` column when it has one, else from its scores (ties by
``doc_id``); the scores are not used otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from convlab.fusion.base import FUSIONS, Runs, aligned, ranked

__all__ = ["rrf"]


@FUSIONS.register("rrf")
def rrf(runs: Runs, weights: Sequence[float] | None = None, *, k: float = 60.0) -> pl.DataFrame:
    """Weighted reciprocal rank fusion of ``runs``.

    Args:
        runs: runs (``query_id, doc_id, score`` and optionally ``rank``).
        weights: one per run (default: all 1).
        k: the rank constant, >= 0.

    Returns:
        The fused run, ``query_id, doc_id, score, rank``.

    Example:
        >>> a = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["d1", "d2"], "score": [2.0, 1.0]})
        >>> b = pl.DataFrame({"query_id": ["q"], "doc_id": ["d2"], "score": [9.0]})
        >>> rrf([a, b], [1.0, 2.0], k=1).rows()  # d2: 1/(1+2) + 2/(1+1); d1: 1/(1+1)
        [('q', 'd2', 1.3333333333333333, 1), ('q', 'd1', 0.5, 2)]

    Raises:
        ValueError: ``k`` negative or not finite, or bad runs or weights.
    """
    if not math.isfinite(k) or k < 0:
        raise ValueError(f"rrf k is {k}; it must be finite and >= 0")
    wide, ws = aligned(runs, weights, lambda: 1.0 / (k + pl.col("rank").cast(pl.Float64)))
    terms = [pl.col(f"v{j}").fill_null(0.0) * w for j, w in enumerate(ws)]
    return ranked(wide, pl.sum_horizontal(terms))
