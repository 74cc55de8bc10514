"""The experiment files shipped under eval/experiments read as valid systems."""

from __future__ import annotations

from pathlib import Path

import pytest

from convlab.evaluation.compare import DEFAULT_STRATEGIES
from convlab.systems.file import read_systems
from convlab.systems.system import default_systems

EXPERIMENTS = sorted((Path(__file__).parents[2] / "eval" / "experiments").glob("*.toml"))


def test_there_are_experiment_files() -> None:
    assert EXPERIMENTS


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_an_experiment_file_reads(path: Path) -> None:
    # a file with defaults = true gets the default systems of eval.run's default strategies
    systems = read_systems(path, strategies=DEFAULT_STRATEGIES.split(","))
    assert len({s.name for s in systems}) == len(systems)


def test_default_systems_need_a_strategy() -> None:
    with pytest.raises(ValueError, match="at least one strategy"):
        default_systems([])
