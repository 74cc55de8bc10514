"""Every study that keeps the contract, imported so that :data:`STUDIES` holds each of them.

A study registers itself where it is defined (``STUDIES.add`` at the end of its module); this
module imports those modules, and nothing imports it but who lists the studies.
"""

from __future__ import annotations

from convlab.studies import (
    confidence_study,
    finetune_cv,
    frontier,
    fusion_study,
    levers,
    orderings,
    policy_cv_run,
    redact_study,
    resurrection_grid,
    routing_study,
    select_cv,
)
from convlab.studies.contract import STUDIES

__all__ = ["MODULES", "STUDIES"]

MODULES = (
    confidence_study,
    finetune_cv,
    frontier,
    fusion_study,
    levers,
    orderings,
    policy_cv_run,
    redact_study,
    resurrection_grid,
    routing_study,
    select_cv,
)
"""The modules whose import registers the studies."""
