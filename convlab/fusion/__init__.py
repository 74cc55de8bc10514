"""Fusion of several runs into one: weighted RRF, convex combination, CombSUM, CombMNZ.

Each method is one module of this package registered in :data:`FUSIONS`; :func:`fuse` picks one
by name, :func:`fuse_carrying` fuses views keeping each doc's unit. Every module here is imported
below, so a new method is one file: a system's ``fusion``, hybrid search, ``convlab search
--fusion`` and the search panel all offer what :data:`FUSIONS` holds.
"""

import importlib
import pkgutil

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

for _module in pkgutil.iter_modules(__path__):  # each method registers itself when imported
    importlib.import_module(f"{__name__}.{_module.name}")

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
