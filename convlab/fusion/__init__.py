"""Fusion of several runs into one: weighted RRF, convex combination, CombSUM, CombMNZ.

Each method is one module registered in :data:`FUSIONS`; :func:`fuse` picks one by name.
"""

from convlab.fusion import combmnz, combsum, convex, rrf  # noqa: F401  (they register themselves)
from convlab.fusion.base import FUSIONS, NORMS, Aligned, fuse, normalised

__all__ = ["FUSIONS", "NORMS", "Aligned", "fuse", "normalised"]
