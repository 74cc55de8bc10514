"""The project's defaults: one value each, consistent with one another and with what ships."""

from __future__ import annotations

from convlab import defaults
from convlab.systems.file import read_systems


def test_the_default_budget_is_measured_by_every_grid() -> None:
    # the default budget is a cell of the evaluation grid and of the cross-validated choice,
    # and the reference budget is one the cross-validation reports
    assert defaults.BUDGET in defaults.BUDGETS
    assert set(defaults.CV_BUDGETS) <= set(defaults.BUDGETS)
    assert defaults.REFERENCE_BUDGET in defaults.CV_BUDGETS
    assert defaults.REFERENCE_BUDGET > defaults.BUDGET
    assert list(defaults.BUDGETS) == sorted(set(defaults.BUDGETS))


def test_the_default_system_file_ships_the_named_system() -> None:
    (system,) = read_systems(defaults.SYSTEM_FILE)
    assert system.name == defaults.SYSTEM


def test_the_default_policy_is_registered() -> None:
    from convlab.resurrection import POLICIES

    assert defaults.POLICY in POLICIES.names()
    assert set(defaults.REFERENCE_CELL[1:]) <= set(POLICIES.names())
