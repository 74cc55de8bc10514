"""Resurrection: bring back context for ranked hits within a token budget, by a policy.

Policies (one file each, registered in :data:`POLICIES`): ``unit`` (what was embedded together,
the default), ``doc``, ``window``, ``pair``, ``unit+doc``, ``adaptive``; a spec names one with
its parameters (``window:n=2``, :func:`get_policy`). :func:`resurrect` builds a context;
:func:`budget_measures` scores contexts against labelled queries (over :class:`Shared`
look-ups of the units and chunks, made once by a caller that measures them again).
"""

from __future__ import annotations

from convlab.resurrection import adaptive, doc, pair, unit, unit_doc, window
from convlab.resurrection.base import (
    POLICIES,
    Resurrection,
    budget_measures,
    evidence_chunks,
    get_policy,
    normalize_answer,
    resurrect,
    walk,
)
from convlab.resurrection.shared import Shared

__all__ = [
    "POLICIES",
    "Resurrection",
    "Shared",
    "budget_measures",
    "evidence_chunks",
    "get_policy",
    "normalize_answer",
    "resurrect",
    "walk",
]

_REGISTERED = (adaptive, doc, pair, unit, unit_doc, window)  # imported for their @POLICIES.register
