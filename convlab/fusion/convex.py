"""Convex combination: the weighted mean of the runs' normalised scores.

convex(d) = Σ_i (w_i / Σ_j w_j) · φ_i(d), with φ_i the per-query normalisation of run i's scores,
min-max (s - min) / (max - min) or z-score (s - mean) / sd (see
:func:`convlab.fusion.base.normalised`). Bruch, Gai & Ingber, "An Analysis of Fusion Functions
for Hybrid Retrieval", ACM TOIS 42(1), 2023, found this convex combination (TM2C2 with min-max)
beats RRF once its weight is tuned on a few queries, and that it is robust to the normalisation.

A doc that run i did not retrieve gets φ_i = the lowest normalised score of run i for that
query (0 under min-max): an unretrieved doc scores at most as well as the run's last doc, not
as an average one, which would be z-score's 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from convlab.fusion.base import FUSIONS, Runs, aligned, normalised, ranked

__all__ = ["convex"]


@FUSIONS.register("convex")
def convex(
    runs: Runs,
    weights: Sequence[float] | None = None,
    *,
    norm: str = "min-max",
) -> pl.DataFrame:
    """Convex combination of the runs' normalised scores, the weights scaled to sum to 1.

    Args:
        runs: runs (``query_id, doc_id, score``).
        weights: one per run (default: all 1), scaled by their sum.
        norm: ``min-max`` or ``z-score`` (or ``none``: raw scores).

    Returns:
        The fused run, ``query_id, doc_id, score, rank``.

    Example:
        >>> a = pl.DataFrame({"query_id": ["q"] * 3, "doc_id": ["d1", "d2", "d3"],
        ...                   "score": [3.0, 2.0, 1.0]})
        >>> b = pl.DataFrame({"query_id": ["q"] * 2, "doc_id": ["d3", "d2"], "score": [0.9, 0.5]})
        >>> convex([a, b], [3.0, 1.0]).rows()  # d1: .75*1; d2: .75*.5 + 0; d3: 0 + .25*1
        [('q', 'd1', 0.75, 1), ('q', 'd2', 0.375, 2), ('q', 'd3', 0.25, 3)]

    Raises:
        ValueError: an unknown ``norm``, or bad runs or weights.
    """
    wide, ws = aligned(runs, weights, lambda: normalised(pl.col("score"), norm))
    total = sum(ws)
    floors = [pl.col(f"v{j}").min().over("query_id") for j in range(len(ws))]
    terms = [pl.col(f"v{j}").fill_null(floors[j]) * (w / total) for j, w in enumerate(ws)]
    return ranked(wide, pl.sum_horizontal(terms))
