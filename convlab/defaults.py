"""The project's defaults, each named once: budgets, the policy, folds, k and the default system.

Every command, function and record that has one of these defaults imports it from here, so a
default changes in one place. This module is the lowest layer: it imports nothing of convlab.

Example:
    >>> BUDGET in BUDGETS and BUDGET in CV_BUDGETS
    True
    >>> SYSTEM_FILE.name, POLICY
    ('default.toml', 'unit')
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "BUDGET",
    "BUDGETS",
    "CV_BUDGETS",
    "FOLDS",
    "GRID_SYSTEMS",
    "MCP_K",
    "POLICY",
    "REFERENCE_BUDGET",
    "REFERENCE_CELL",
    "SYSTEM",
    "SYSTEM_FILE",
    "K",
]

BUDGET = 512
"""The default resurrection budget, in model tokens: the MCP tools, the search panel, the cell a
study compares and routes (``coverage@512`` among the headline metrics)."""

BUDGETS = (128, 256, 512, 1024, 2048)
"""The budgets an evaluation measures resurrection at (``eval.run``, ``convlab eval``, the
resurrection grid), in tokens."""

CV_BUDGETS = (256, 512, 1024)
"""The budgets the cross-validated choice of a resurrection cell reports, in tokens."""

REFERENCE_BUDGET = 1024
"""The budget of the reference cell a study compares the best cell at :data:`BUDGET` with."""

REFERENCE_CELL = ("message", "unit")
"""The reference (system, policy): does the best cell at :data:`BUDGET` tokens cover as much as
this one at :data:`REFERENCE_BUDGET`?"""

POLICY = "unit"
"""The default resurrection policy: what was embedded with each hit."""

FOLDS = 10
"""The most folds of a grouped cross-validation (10: leave one LoCoMo conversation out)."""

K = 10
"""Results of a search (``convlab search -k``, :meth:`convlab.store.Store.search`)."""

MCP_K = 5
"""Results of an MCP search tool (fewer: each reply goes into a model's context)."""

SYSTEM_FILE = Path(__file__).parent / "systems" / "default.toml"
"""The experiment file of the default system (package data, beside :mod:`convlab.systems`)."""

SYSTEM = "fusion:convex"
"""The name of the default system (the one system of :data:`SYSTEM_FILE`)."""

GRID_SYSTEMS = ("bm25:message", "message", "sequential", "turn_pair")
"""The systems of a resurrection grid when none are named and the run folder saved no grid."""
