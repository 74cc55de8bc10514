"""Experiment files (:mod:`convlab.systems.experiment`): the ``options`` schema of the configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convlab.retrieval import SearchOptions
from convlab.retrieval.options import flat_schema
from convlab.retrieval.rankers import MMR, Recency, SessionCap
from convlab.systems.experiment import parse_experiment
from convlab.systems.file import read_experiment

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    [*ROOT.glob("eval/experiments/*.toml"), *ROOT.glob("convlab/systems/*.toml")],
)
PARSES = json.loads((Path(__file__).parent / "experiment_parses.json").read_text())
"""Each committed experiment file's systems as the hand-written schema parsed them, before the
options were split into filters, retrieval options and ranker configs."""


def test_every_committed_experiment_file_is_held_in_the_fixture() -> None:
    assert sorted(PARSES) == [p.relative_to(ROOT).as_posix() for p in FILES]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_committed_experiment_file_parses_to_the_same_systems(path: Path) -> None:
    experiment = read_experiment(path)
    parsed = {
        "defaults": experiment.defaults,
        "strategies": list(experiment.strategies),
        "systems": [
            {
                **s.as_dict(),
                "ranker_names": list(s.options.ranker_names),
                "scoring": s.options.scoring,
            }
            for s in experiment.systems
        ],
    }
    # JSON as the fixture was written (tuples as lists, times as strings)
    assert json.loads(json.dumps(parsed, default=str)) == PARSES[path.relative_to(ROOT).as_posix()]


def _options(options: dict[str, object]) -> SearchOptions:
    doc = {"systems": [{"name": "s", "strategy": "message", "options": options}]}
    return parse_experiment(doc, "x.toml").systems[0].options


def test_the_options_table_takes_each_config_in_its_form() -> None:
    options = _options({"mmr": 0.7, "recency": True, "recency_days": 7.0, "session_cap": 2})
    assert options.rankers == (Recency(horizon_days=7.0), SessionCap(2), MMR(0.7))
    table = _options({"hierarchical": True, "top_conversations": 2, "prf": {"fb_docs": 3}})
    assert (table.retrieval.hierarchical.n, table.retrieval.prf.fb_docs) == (2, 3)  # type: ignore[union-attr]
    # a switch left off: its fields are read but nothing runs
    assert _options({"density_max": 0.3}).rankers == ()


@pytest.mark.parametrize(
    ("options", "error"),
    [
        # a ranker's own bounds (MMR.lam in [0, 1]), read from its Annotated field
        ({"mmr": 2.0}, r"x.toml: systems\[0\].options.mmr \('s'\): Expected `float` <= 1.0$"),
        # a switch's fields under their flat keys (Recency.horizon_days > 0)
        (
            {"recency_days": 0},
            r"systems\[0\].options.recency_days \('s'\): Expected `float` > 0.0$",
        ),
        # a table's fields (Session.top at least 1)
        (
            {"session": {"top": 0}},
            r"systems\[0\].options.session.top \('s'\): Expected `int` >= 1$",
        ),
        (
            {"session": {"weigh": 1}},
            r"options.session \('s'\): unknown key 'weigh'; valid: weight, top$",
        ),
        ({"k": 20000}, r"systems\[0\].options.k \('s'\): Expected `int` <= 10000$"),
        ({"side": "middle"}, r"options.side \('s'\): Invalid enum value 'middle'$"),
        ({"roles": ["x"]}, r"options.roles\[0\] \('s'\): Invalid enum value 'x'$"),
        ({"retrieval": "sparse"}, r"options.retrieval \('s'\): Invalid enum value 'sparse'$"),
        ({"recency": 1}, r"options.recency \('s'\): Expected `bool`, got `int`$"),
        # projects is a filter of Python callers only
        (
            {"projects": ["a"]},
            r"options \('s'\): unknown key 'projects'; valid: k, conversations, roles,",
        ),
    ],
)
def test_bad_options_get_one_line_naming_file_and_key(
    options: dict[str, object], error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        _options(options)


def test_the_file_takes_every_flat_key_but_projects() -> None:
    doc = {"systems": [{"name": "s", "strategy": "message", "options": {"nope": 1}}]}
    with pytest.raises(ValueError, match="unknown key 'nope'") as caught:
        parse_experiment(doc, "x.toml")
    valid = str(caught.value).split("valid: ")[1].split(", ")
    assert valid == [key for key, _, in_file in flat_schema() if in_file]
    assert "projects" not in valid
    assert {"mmr", "session_cap", "recency_max", "bm25"} <= set(valid)
