"""The experiment files shipped under eval/experiments read as valid systems."""

from __future__ import annotations

from pathlib import Path

import pytest

from convlab.systems.file import DEFAULT_EXPERIMENT, default_strategies, read_systems
from convlab.systems.system import default_systems

EXPERIMENTS = sorted((Path(__file__).parents[2] / "eval" / "experiments").glob("*.toml"))


def test_there_are_experiment_files() -> None:
    assert EXPERIMENTS


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_an_experiment_file_reads(path: Path) -> None:
    # a file with defaults = true gets the default systems of eval.run's default strategies
    systems = read_systems(path, strategies=default_strategies())
    assert len({s.name for s in systems}) == len(systems)


def test_default_systems_need_a_strategy() -> None:
    with pytest.raises(ValueError, match="at least one strategy"):
        default_systems([])


def test_the_default_experiment_is_the_default_systems_of_its_strategies() -> None:
    # eval.run without --systems: these six strategies, in this order (the order of the systems
    # in every run folder)
    strategies = ("isolated", "message", "turn_pair", "sequential", "whole_turn", "qa_pair")
    assert default_strategies() == strategies
    systems = read_systems(DEFAULT_EXPERIMENT)
    assert systems == default_systems(strategies)
    assert [s.name for s in systems][:8] == [*strategies, "bm25:message", "hybrid:message"]


def test_strategies_of_a_file_are_its_defaults_unless_the_caller_names_others(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.toml"
    path.write_text('strategies = ["turn_pair"]\ndefaults = true\n')
    assert [s.name for s in read_systems(path)] == [
        "turn_pair",
        "bm25:turn_pair",
        "hybrid:turn_pair",
    ]
    named = read_systems(path, strategies=["whole_turn"])
    assert [s.name for s in named] == ["whole_turn", "bm25:whole_turn", "hybrid:whole_turn"]
    path.write_text("defaults = true\n")  # no strategies: the default experiment's
    assert read_systems(path) == read_systems(DEFAULT_EXPERIMENT)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('strategies = ["nope"]\n', r"e\.toml: strategies\[0\]: unknown strategy 'nope'; valid: "),
        ('strategies = ["message", "message"]\n', "strategies: a strategy is named twice"),
        ("strategies = 3\n", "strategies"),
    ],
)
def test_bad_strategies_of_a_file_are_refused(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "e.toml"
    path.write_text(text + "defaults = true\n")
    with pytest.raises(ValueError, match=error):
        read_systems(path)
