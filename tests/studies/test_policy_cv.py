"""The resurrection cell chosen by grouped cross-validation (issue 23, point 5).

The grids below are written by hand. The central one has two conversations, ``a`` and ``b``, two
queries each, and two cells at 512 tokens: ``x + doc`` covers all of ``a`` and none of ``b``;
``y + window`` covers none of ``a`` and 0.2 of ``b``. On all queries ``x`` is best (0.5 against
0.1), so a choice made on all queries, or on the test fold, would score ``a`` with ``x``. With two
folds (one conversation each), the fold that holds ``a`` out trains on ``b`` and must choose
``y`` (``a`` scores 0.0), and the fold that holds ``b`` out trains on ``a`` and must choose ``x``
(``b`` scores 0.0): held-out mean 0.0, where the leaky choices give 0.5 (best on all) or 0.6 (best
on the test fold).
"""

from __future__ import annotations

import polars as pl
import pytest

from convlab.evaluation.significance import holm, paired_randomization
from convlab.studies.policy_cv import cv_cells, family_cv, policy_cv

QUERIES = ["a:q0", "a:q1", "b:q0", "b:q1"]


def _grid(cells: dict[tuple[str, str, int], list[float | None]]) -> pl.DataFrame:
    """One row per (cell, query); ``answer_contained`` equal to coverage (1.0 where None)."""
    rows = [
        {
            "system": system,
            "policy": policy,
            "budget": budget,
            "query_id": q,
            "coverage": c,
            "answer_contained": 1.0 if c is None else c,
        }
        for (system, policy, budget), values in cells.items()
        for q, c in zip(QUERIES, values, strict=True)
    ]
    return pl.DataFrame(rows, schema_overrides={"budget": pl.Int32})


LEAKY = {
    ("x", "doc", 512): [1.0, 1.0, 0.0, 0.0],
    ("y", "window", 512): [0.0, 0.0, 0.2, 0.2],
}


def test_without_a_conversation_in_the_id_the_relevant_docs_name_it() -> None:
    grid = _grid(LEAKY).with_columns(pl.col("query_id").str.replace(":", "-"))
    qrels = pl.DataFrame(
        {
            "query_id": [q.replace(":", "-") for q in QUERIES],
            "doc_id": [f"{q[0]}:m1" for q in QUERIES],
            "relevance": [1] * 4,
        }
    )
    assert cv_cells(grid, 512, qrels=qrels)[1].height == 2  # two conversations: two folds
    assert cv_cells(grid, 512)[1].height == 4  # without qrels: four questions


def test_each_fold_chooses_on_its_training_groups_only() -> None:
    held_out, choices = cv_cells(_grid(LEAKY), 512)
    by_group = {r["test_groups"]: (r["system"], r["policy"]) for r in choices.to_dicts()}
    assert by_group == {"a": ("y", "window"), "b": ("x", "doc")}
    assert choices["train_coverage"].to_list() == pytest.approx(
        [1.0 if g == "b" else 0.2 for g in choices["test_groups"]]
    )
    assert held_out["query_id"].to_list() == QUERIES
    assert held_out["group"].to_list() == ["a", "a", "b", "b"]
    assert held_out["system"].to_list() == ["y", "y", "x", "x"]
    assert held_out["coverage"].to_list() == [0.0, 0.0, 0.0, 0.0]


def test_ties_go_to_the_cell_named_first_and_nulls_are_skipped() -> None:
    grid = _grid(
        {
            ("x", "unit", 256): [0.5, None, 0.5, 0.5],  # mean 0.5 over its defined queries
            ("y", "doc", 256): [0.5, 0.5, 0.5, 0.5],
        }
    )
    held_out, choices = cv_cells(grid, 256)
    assert choices["system"].to_list() == ["x", "x"]
    assert held_out["coverage"].to_list() == [0.5, None, 0.5, 0.5]


def test_longmemeval_questions_are_their_own_groups_and_folds_are_capped() -> None:
    grid = pl.DataFrame(
        {
            "system": ["s"] * 3,
            "policy": ["doc"] * 3,
            "budget": [512] * 3,
            "query_id": ["q1", "q2", "q3"],
            "coverage": [1.0, 0.0, 1.0],
            "answer_contained": [1.0, 0.0, 1.0],
        }
    )
    held_out, choices = cv_cells(grid, 512, folds=10)
    assert choices.height == 3
    assert sorted(held_out["group"].to_list()) == ["q1", "q2", "q3"]


def test_bad_grids_are_refused() -> None:
    with pytest.raises(ValueError, match="no rows at 1024"):
        cv_cells(_grid(LEAKY), 1024)
    with pytest.raises(ValueError, match="has 3 rows for 4 queries"):
        cv_cells(_grid(LEAKY).slice(0, 7), 512)
    one_group = _grid(LEAKY).with_columns(pl.lit("a:q").add(pl.col("query_id")).alias("query_id"))
    one_group = one_group.with_columns(pl.col("query_id").str.replace(r"^a:q(.):", "a:$1"))
    with pytest.raises(ValueError, match="1 query groups cannot make 2 folds"):
        cv_cells(one_group, 512)


def test_cv_at_512_against_message_unit_at_1024() -> None:
    grid = _grid(
        {
            **LEAKY,
            ("message", "unit", 512): [0.0, 0.0, 0.0, 0.0],
            ("message", "unit", 1024): [0.0, 0.5, 0.0, 0.5],
        }
    )
    grid = grid.filter(~((pl.col("budget") == 1024) & (pl.col("system") != "message")))
    result = policy_cv(grid, baseline="bm25:message", budgets=(512,))
    # folds: a held out -> trained on b, where y (0.2) beats x (0) and message (0); b -> x
    assert result["budgets"]["512"]["coverage"] == pytest.approx(0.0)
    assert result["budgets"]["512"]["chosen"] == {"y + window": 1, "x + doc": 1}
    assert result["reference"] == {
        "system": "message",
        "policy": "unit",
        "budget": 1024,
        "message_in_grid": True,
        "queries": 4,
        "coverage": 0.25,
        "answer_contained": 0.25,
    }
    cov = result["comparison"]["coverage"]
    assert cov["delta"] == pytest.approx(-0.25)
    assert cov["p"] == paired_randomization([0.0] * 4, [0.0, 0.5, 0.0, 0.5], seed=0)
    assert result["in_sample"]["system"] == "x"  # best on all queries: never the CV figure
    assert result["missing"] == []


def test_without_message_the_reference_is_the_baseline_with_unit() -> None:
    grid = _grid({**LEAKY, ("bm25", "unit", 1024): [0.0, 0.0, 1.0, 1.0]})
    result = policy_cv(grid, baseline="bm25", budgets=(256, 512))
    assert result["reference"]["system"] == "bm25"
    assert result["reference"]["message_in_grid"] is False
    assert result["missing"] == [256]
    assert result["comparison"]["coverage"]["delta"] == pytest.approx(-0.5)


# Window's n and the adaptive thresholds as candidates (issue 23, point 5). Per conversation:
# window:n=2 is best on a (and on all queries), window:n=3 on b; adaptive:short=32:long=128 on a
# (and on all), adaptive:short=64:long=256 on b. A fold that holds a out trains on b alone.
PARAMETERS = {
    ("x", "window", 512): [0.3, 0.3, 0.3, 0.3],
    ("x", "window:n=2", 512): [1.0, 1.0, 0.0, 0.0],
    ("x", "window:n=3", 512): [0.0, 0.0, 0.4, 0.4],
    ("x", "adaptive", 512): [0.0, 0.0, 0.0, 0.0],
    ("x", "adaptive:short=32:long=128", 512): [0.9, 0.9, 0.1, 0.1],
    ("x", "adaptive:short=64:long=256", 512): [0.2, 0.2, 0.6, 0.6],
}


def test_window_n_and_adaptive_thresholds_are_chosen_on_the_training_folds_only() -> None:
    families = family_cv(_grid(PARAMETERS), [512])
    assert list(families) == ["window", "adaptive"]  # one family per registered policy
    for family, expected, held_out_mean in (
        # a held out: b chooses n=3 (0.4 > 0.3 > 0.0), a scores 0.0; b held out: a chooses n=2
        # (b 0.0). Best on all queries (n=2) would give 0.5, best on the test fold 0.7.
        ("window", {"a": "window:n=3", "b": "window:n=2"}, 0.0),
        # a held out: b chooses 64/256 (0.6), a scores 0.2; b held out: a chooses 32/128, b 0.1.
        # Best on all (32/128) would give 0.5, best on the test fold 0.75.
        (
            "adaptive",
            {"a": "adaptive:short=64:long=256", "b": "adaptive:short=32:long=128"},
            0.15,
        ),
    ):
        held_out, choices = families[family][512]
        assert dict(zip(choices["test_groups"], choices["policy"], strict=True)) == expected
        assert held_out["coverage"].mean() == pytest.approx(held_out_mean)
    # the free choice over every cell: b alone picks adaptive 64/256 (a: 0.2), a alone n=2 (b: 0)
    held_out, choices = cv_cells(_grid(PARAMETERS), 512)
    assert held_out["coverage"].to_list() == pytest.approx([0.2, 0.2, 0.0, 0.0])


def test_each_policy_family_is_tested_against_the_reference_with_holm() -> None:
    grid = _grid({**PARAMETERS, ("message", "unit", 1024): [0.0, 0.0, 0.0, 0.0]})
    result = policy_cv(grid, baseline="message", budgets=(512,))
    assert list(result["policies"]) == ["window", "adaptive"]  # unit has no row at 512
    window = result["policies"]["window"]
    assert window["budgets"]["512"]["coverage"] == pytest.approx(0.0)
    assert window["budgets"]["512"]["chosen"] == {"x + window:n=3": 1, "x + window:n=2": 1}
    adaptive = result["policies"]["adaptive"]["comparison"]["coverage"]
    assert adaptive["delta"] == pytest.approx(0.15)
    ps = [result["comparison"][m]["p"] for m in ("coverage", "answer_contained")]
    ps += [
        result["policies"][f]["comparison"][m]["p"]
        for f in ("window", "adaptive")
        for m in ("coverage", "answer_contained")
    ]
    assert adaptive["p_holm"] == pytest.approx(holm(ps)[4])
