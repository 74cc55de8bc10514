"""CombMNZ: CombSUM times the number of runs that retrieved the doc.

CombMNZ(d) = |{i : d ∈ run_i}| · Σ_{i : d ∈ run_i} w_i · φ_i(d), Fox & Shaw, "Combination of
Multiple Searches", TREC-2, 1994 (NIST SP 500-215); φ_i as in :mod:`convlab.fusion.combsum`.
"Retrieved" means the doc is in the run (runs of weight 0 are left out), whatever its score:
a doc normalised to 0 still counts.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from convlab.fusion.base import FUSIONS, Runs, ranked, summed

__all__ = ["combmnz"]


@FUSIONS.register("combmnz")
def combmnz(
    runs: Runs,
    weights: Sequence[float] | None = None,
    *,
    norm: str = "none",
) -> pl.DataFrame:
    """CombMNZ of ``runs``: their CombSUM, times the number of runs that retrieved the doc.

    Args:
        runs: runs (``query_id, doc_id, score``), as for CombSUM.
        weights: one per run (default: all 1); the count ignores them.
        norm: the normalisation applied per run and query before summing (``none``,
            ``min-max`` or ``z-score``).

    Returns:
        The fused run (``query_id, doc_id, score, rank``).

    Example:
        >>> a = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["d1", "d2"], "score": [2.0, 3.0]})
        >>> b = pl.DataFrame({"query_id": ["q"], "doc_id": ["d1"], "score": [0.5]})
        >>> combmnz([a, b]).rows()  # d1: 2 * (2 + 0.5) beats d2: 1 * 3 (CombSUM ranks d2 first)
        [('q', 'd1', 5.0, 1), ('q', 'd2', 3.0, 2)]

    Raises:
        ValueError: an unknown ``norm``, or bad runs or weights.
    """
    wide, total, hits = summed(runs, weights, norm)
    return ranked(wide, hits * total)
