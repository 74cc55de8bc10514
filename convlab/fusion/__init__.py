"""Fusion of several runs into one: weighted RRF, convex combination, CombSUM, CombMNZ.

Each method is one module of this package registered in :data:`FUSIONS`; :func:`fuse` picks one
by name, :func:`fuse_carrying` fuses views keeping each doc's unit. Each method's module is
imported below by name, so a new method is one file and one name here: a system's ``fusion``,
hybrid search, ``convlab search --fusion`` and the search panel all offer what :data:`FUSIONS`
holds.
"""

from convlab.fusion import combmnz, combsum, convex, rrf  # noqa: F401  (they register themselves)
from convlab.fusion.base import (
    FUSIONS,
    NORMS,
    Aligned,
    carried,
    check_params,
    describe,
    fuse,
    fuse_carrying,
    normalised,
)

__all__ = [
    "FUSIONS",
    "NORMS",
    "Aligned",
    "carried",
    "check_params",
    "describe",
    "fuse",
    "fuse_carrying",
    "normalised",
]
