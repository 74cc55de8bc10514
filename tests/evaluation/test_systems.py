"""Systems as records: views parsed from names, checks, and the plain-data round trip."""

from __future__ import annotations

import pytest

from convlab.retrieval import Retrieval, SearchOptions
from convlab.systems.system import System, Tuning, View, default_systems


@pytest.mark.parametrize(
    ("name", "strategy", "retrieval"),
    [
        ("sequential", "sequential", Retrieval.DENSE),
        ("dense:turn_pair", "turn_pair", Retrieval.DENSE),
        ("bm25:message", "message", Retrieval.LEXICAL),
        ("lexical:message", "message", Retrieval.LEXICAL),
        ("hybrid:whole_turn", "whole_turn", Retrieval.HYBRID),
    ],
)
def test_views_parse_from_their_names(name: str, strategy: str, retrieval: Retrieval) -> None:
    view = View.parse(name)
    assert (view.strategy, view.retrieval) == (strategy, retrieval)
    assert View.parse(view.name) == view  # the name reads back to the same view


def test_an_unknown_view_prefix_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="prefix 'sparse' is not one of dense, bm25"):
        View.parse("sparse:message")


def test_one_view_is_written_with_strategy_and_retrieval() -> None:
    s = System(name="bm25:sequential", strategy="sequential", retrieval="bm25")
    assert s.views == (View("sequential", Retrieval.LEXICAL),)
    assert not s.fused
    assert s.as_dict() == {
        "name": "bm25:sequential",
        "strategy": "sequential",
        "retrieval": "lexical",
        "options": {},
    }


def test_several_views_take_the_first_views_strategy() -> None:
    s = System(name="f", views=("bm25:message", "sequential"), weights=(1, 0.5))
    assert s.fused
    assert s.strategy == "message"
    assert s.retrieval is Retrieval.LEXICAL
    assert s.weights == (1.0, 0.5)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({}, "needs a strategy or views"),
        ({"views": ("message", "sequential"), "weights": (1.0,)}, "1 weights for 2 views"),
        ({"strategy": "message", "weights": (1.0,)}, "has one view"),
        ({"strategy": "message", "tuning": Tuning()}, "has one view"),
        ({"views": ("message", "bm25:message", "message")}, "names a view twice"),
        ({"views": ("message", "sequential"), "fusion": "borda"}, "borda"),
        ({"strategy": "message", "resurrection": "everything"}, "everything"),
        ({"strategy": "message", "text": "iso"}, "iso"),
    ],
)
def test_invalid_systems_are_refused(kwargs: dict, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        System(name="s", **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"weights": ()}, "one or more weights"),
        ({"weights": (-1.0,)}, "one or more weights >= 0"),
        ({"samples": 0}, "samples is 0"),
        ({"folds": 1}, "folds is 1"),
    ],
)
def test_invalid_tuning_is_refused(kwargs: dict, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        Tuning(**kwargs)


def test_a_system_reads_back_from_its_plain_data() -> None:
    s = System(
        name="f",
        views=("bm25:message", "sequential", "turn_pair"),
        fusion="rrf",
        tuning=Tuning(weights=(0, 1), params={"k": (10, 60)}, samples=4),
        options=SearchOptions.of(recency=True),
        resurrection="window",
    )
    record = s.as_dict()
    assert record["options"] == {"recency": True}  # only what differs from the defaults
    assert System.from_dict(record) == s


def test_from_dict_names_an_unknown_key() -> None:
    with pytest.raises(ValueError, match="unknown key\\(s\\) wieghts; valid: "):
        System.from_dict({"name": "s", "strategy": "message", "wieghts": [1]})


def test_default_systems_keep_todays_and_add_context_bm25_and_fusions() -> None:
    names = [s.name for s in default_systems(["message", "sequential", "turn_pair"])]
    assert names == [
        "message",
        "sequential",
        "turn_pair",
        "bm25:message",
        "hybrid:message",
        "hybrid:turn_pair",
        "bm25:sequential",
        "bm25:turn_pair",
        "fusion:convex",
        "fusion:rrf",
    ]
    fused = default_systems(["message", "sequential", "turn_pair"])[-2]
    assert [v.name for v in fused.views] == [
        "bm25:message",
        "bm25:sequential",
        "bm25:turn_pair",
        "sequential",
        "turn_pair",
    ]
    # a single strategy has nothing to fuse: today's three systems only
    assert [s.name for s in default_systems(["whole_turn"])] == [
        "whole_turn",
        "bm25:whole_turn",
        "hybrid:whole_turn",
    ]
