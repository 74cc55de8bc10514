"""Experiment files: systems read from TOML, written back, and the chosen settings fixed."""

from __future__ import annotations

from pathlib import Path

import pytest

from convlab.systems.file import (
    chosen_systems,
    read_systems,
    transfer_systems,
    write_systems,
)
from convlab.systems.system import System, Tuning, default_systems

EXPERIMENT = """
defaults = true

[[systems]]
name = "fusion:bm25+seq"
views = ["bm25:message", "bm25:sequential", "sequential"]
fusion = "convex"
fusion_params = { norm = "z-score" }
weights = [1.0, 1.0, 0.5]
resurrection = "window"

[[systems]]
name = "tuned"
views = ["bm25:message", "sequential"]
tuning = { weights = [0.0, 0.5, 1.0], samples = 8 }
"""


def test_an_experiment_file_adds_its_systems_to_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "systems.toml"
    path.write_text(EXPERIMENT)
    systems = read_systems(path, strategies=["message", "sequential"])
    defaults = default_systems(["message", "sequential"])
    assert systems[: len(defaults)] == defaults
    fixed, tuned = systems[len(defaults) :]
    assert [v.name for v in fixed.views] == ["bm25:message", "bm25:sequential", "sequential"]
    assert fixed.weights == (1.0, 1.0, 0.5)
    assert fixed.fusion_params == {"norm": "z-score"}
    assert fixed.resurrection == "window"
    assert tuned.tuning == Tuning(weights=(0.0, 0.5, 1.0), samples=8)


def test_written_systems_read_back_equal(tmp_path: Path) -> None:
    systems = default_systems(["message", "sequential", "turn_pair"])
    write_systems(systems, tmp_path / "out.toml")
    assert read_systems(tmp_path / "out.toml") == systems


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "[[systems]]\nname = 'x'\nstrategy = 'message'\nwieghts = [1]\n",
            "systems\\[0\\] \\('x'\\): unknown key 'wieghts'",
        ),
        ("[[systems]]\nname = 'x'\n", "needs a strategy or views"),
        ("defualts = true\n", "unknown key 'defualts'; valid: strategies, defaults, systems"),
        ("[[systems]\n", "not valid TOML"),
        ("defaults = false\n", "no systems"),
    ],
)
def test_a_bad_file_names_itself_and_the_problem(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=error) as info:
        read_systems(path)
    assert str(path) in str(info.value)


def test_chosen_systems_fix_the_tuned_settings_and_leave_the_rest_out() -> None:
    tuned = System(
        name="f",
        views=("bm25:message", "sequential"),
        fusion="rrf",
        tuning=Tuning(params={"k": (10, 60)}),
    )
    plain = System(name="message", strategy="message")
    out = chosen_systems([plain, tuned], {"f": {"weights": [1.0, 0.25], "params": {"k": 10}}})
    assert len(out) == 1
    assert out[0].tuning is None
    assert out[0].weights == (1.0, 0.25)
    assert out[0].fusion_params == {"k": 10}
    assert out[0].views == tuned.views


def test_transfer_systems_keep_the_baseline_the_parts_and_the_fixed_choice() -> None:
    systems = default_systems(["isolated", "message", "sequential", "turn_pair"])
    tuned = {
        "fusion:convex": {"weights": [1.0, 1.0, 0.0, 1.0, 0.5], "params": {}},
        "fusion:rrf": {"weights": [1.0, 0.5, 0.5, 1.0, 0.0], "params": {"k": 10}},
    }
    out = transfer_systems(systems, tuned, "isolated")
    assert [s.name for s in out] == [
        "isolated",
        "sequential",
        "turn_pair",
        "bm25:message",
        "bm25:sequential",
        "bm25:turn_pair",
        "fusion:convex",
        "fusion:rrf",
    ]
    assert out[-2].weights == (1.0, 1.0, 0.0, 1.0, 0.5)
    assert out[-1].fusion_params == {"k": 10}
    assert transfer_systems(systems, {}, "isolated") == []


def test_search_options_read_back_equal(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from convlab.retrieval import SearchOptions

    options = SearchOptions.of(
        since=datetime(2026, 1, 1, tzinfo=UTC), conversations=("c1",), roles=("user",), mmr=0.5
    )
    systems = [System(name="a", strategy="message", options=options)]
    write_systems(systems, tmp_path / "out.toml")
    assert read_systems(tmp_path / "out.toml") == systems  # tuples stay tuples
