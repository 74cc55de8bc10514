"""CombSUM: the (weighted) sum of a doc's scores over the runs that retrieved it.

CombSUM(d) = Σ_{i : d ∈ run_i} w_i · φ_i(d), Fox & Shaw, "Combination of Multiple Searches",
TREC-2, 1994 (NIST SP 500-215); φ_i is the run's per-query normalisation (``none`` by default, as
in the paper; ``min-max`` as Lee, SIGIR 1997, recommends; or ``z-score``). A run that did not
retrieve d adds nothing (0), as in the paper; under ``z-score`` that is an average score, so
prefer :mod:`convlab.fusion.convex` there.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from convlab.fusion.base import FUSIONS, Runs, ranked, summed

__all__ = ["combsum"]


@FUSIONS.register("combsum")
def combsum(
    runs: Runs,
    weights: Sequence[float] | None = None,
    *,
    norm: str = "none",
) -> pl.DataFrame:
    """CombSUM of ``runs``.

    Args:
        runs: runs (``query_id, doc_id, score``).
        weights: one per run (default: all 1).
        norm: ``none``, ``min-max`` or ``z-score``, applied per run and query first.

    Returns:
        The fused run, ``query_id, doc_id, score, rank``.

    Example:
        >>> a = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["d1", "d2"], "score": [1.0, 3.0]})
        >>> b = pl.DataFrame({"query_id": ["q"], "doc_id": ["d1"], "score": [2.5]})
        >>> combsum([a, b]).rows()  # d1: 1 + 2.5; d2: 3
        [('q', 'd1', 3.5, 1), ('q', 'd2', 3.0, 2)]

    Raises:
        ValueError: an unknown ``norm``, or bad runs or weights.
    """
    wide, total, _ = summed(runs, weights, norm)
    return ranked(wide, total)
