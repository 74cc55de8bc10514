"""What checks the rows a search answers from before the answer is given: a :class:`RowGuard`.

A stored index is checked when it is opened (its files whole up to a size, a sample of larger
ones), but a same-size change in the middle of a large file (a row swapped or overwritten) can
escape a sample. So an index opened from a store carries a guard, and each search checks what
it answers from: the stored bytes of its hits' vectors (:meth:`RowGuard.check`) and that each
hit's score is the inner product of the query with its stored vector (:func:`check_hits`), so a
FAISS file whose rows disagree with ``vectors.npy`` is caught too.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

__all__ = ["SCORE_TOLERANCE", "RowGuard", "check_hits"]

SCORE_TOLERANCE = 1e-3
"""How far a hit's score may be from its query's inner product with the stored vector (float16
vectors on disk and FAISS's own arithmetic stay within 1e-4)."""


class RowGuard(Protocol):
    """Checks the stored rows of an index (a store's :class:`convlab.store.manifest.RowBlocks`)."""

    def check(self, rows: np.ndarray) -> None:
        """Raise when the stored bytes of these rows' vectors are damaged."""
        ...

    def damaged(self, name: str, what: str) -> Exception:
        """The error for the index's file ``name`` found damaged (``what``), to raise."""
        ...


def check_hits(
    guard: RowGuard, queries: np.ndarray, scores: np.ndarray, rows: np.ndarray, vectors: np.ndarray
) -> None:
    """Check a search's hits: their vectors' bytes, and their scores against those vectors.

    Args:
        guard: the index's guard.
        queries: ``(m, d)`` query vectors.
        scores: ``(m, k)`` scores the search gave.
        rows: ``(m, k)`` rows it gave (``-1`` padding ignored).
        vectors: ``(m, k, d)`` the stored vectors of ``rows`` (any row for the padding).

    Raises:
        Exception: the guard's, naming ``index.faiss`` when a score is not its vector's.
    """
    exact = np.einsum("md,mkd->mk", queries, vectors)
    bad = (rows >= 0) & ~(np.abs(exact - scores) <= SCORE_TOLERANCE)
    if bad.any():
        j, i = (int(x[0]) for x in np.nonzero(bad))
        raise guard.damaged(
            "index.faiss",
            f"row {int(rows[j, i])} scored {float(scores[j, i]):.4f}, but its stored vector "
            f"{float(exact[j, i]):.4f} (the index and vectors.npy disagree)",
        )
