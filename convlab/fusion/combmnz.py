"""CombMNZ: CombSUM times the number of runs that retrieved the doc.

CombMNZ(d) = |{i : d ∈ run_i}| · Σ_{i : d ∈ run_i} w_i · φ_i(d), Fox & Shaw, "Combination of
Multiple Searches", TREC-2, 1994 (NIST SP 500-215); φ_i as in :mod:`convlab.fusion.combsum`.
"Retrieved" means the doc is in the run (runs of weight 0 are left out), whatever its score:
a doc normalised to 0 still counts.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from convlab.fusion.base import FUSIONS, aligned, normalised, ranked

__all__ = ["combmnz"]


@FUSIONS.register("combmnz")
def combmnz(
    runs: Sequence[pl.DataFrame],
    weights: Sequence[float] | None = None,
    *,
    norm: str = "none",
) -> pl.DataFrame:
    """CombMNZ of ``runs``.

    Args:
        runs: runs (``query_id, doc_id, score``).
        weights: one per run (default: all 1).
        norm: ``none``, ``min-max`` or ``z-score``, applied per run and query first.

    Returns:
        The fused run, ``query_id, doc_id, score, rank``.

    Example:
        >>> a = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["d1", "d2"], "score": [1.0, 3.0]})
        >>> b = pl.DataFrame({"query_id": ["q"], "doc_id": ["d1"], "score": [2.5]})
        >>> combmnz([a, b]).rows()  # d1: 2 * (1 + 2.5); d2: 1 * 3
        [('q', 'd1', 7.0, 1), ('q', 'd2', 3.0, 2)]

    Raises:
        ValueError: an unknown ``norm``, or bad runs or weights.
    """
    wide, ws = aligned(runs, weights, lambda: normalised(pl.col("score"), norm))
    columns = [f"v{j}" for j in range(len(ws))]
    total = pl.sum_horizontal(
        [pl.col(c).fill_null(0.0) * w for c, w in zip(columns, ws, strict=True)]
    )
    hits = pl.sum_horizontal([pl.col(c).is_not_null().cast(pl.Float64) for c in columns])
    return ranked(wide, hits * total)
