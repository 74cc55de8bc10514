"""A lever's setting chosen by grouped CV, by hand; the choice never reads its own test fold.

Four conversations a, b, c, d, one query each, four folds (each conversation held out once).
recall@5: the base 0 everywhere; setting s1 1, 1, 1, 0; setting s2 0, 0, 0, 1.
Holding out a (or b, or c): training means s1 2/3, s2 1/3: s1, held-out value 1.
Holding out d: training means s1 1, s2 0: s1, held-out value 0, though d's own value prefers s2
(a choice that read its test fold would give d 1 and a mean of 1.0).
Held-out mean 3/4, base 0: delta 3/4; every fold chose s1.
"""

from __future__ import annotations

import polars as pl
import pytest

from convlab.evaluation.lever_cv import holm_rows, lever_cv, metric_matrix

IDS = ["a:q0", "b:q0", "c:q0", "d:q0"]
VALUES = {"base": [0.0] * 4, "s1": [1.0, 1.0, 1.0, 0.0], "s2": [0.0, 0.0, 0.0, 1.0]}


def _per_query() -> pl.DataFrame:
    rows = [
        {
            "system": s,
            "query_id": q,
            "category": "multi-hop" if q < "c" else "temporal",
            "metric": "recall@5",
            "value": v,
        }
        for s, values in VALUES.items()
        for q, v in zip(IDS, values, strict=True)
    ]
    return pl.DataFrame(rows)


def test_choice_per_fold_by_hand() -> None:
    row, result = lever_cv(_per_query(), "base", ["s1", "s2"], folds=4)
    assert (row["base"], row["with_lever"], row["delta"], row["queries"]) == (0.0, 0.75, 0.75, 4)
    assert row["chosen"] == '{"system": "s1"} x4'
    held = result.per_query.filter(pl.col("metric") == "recall@5")
    assert dict(zip(held["query_id"], held["value"], strict=True)) == {
        "a:q0": 1.0,
        "b:q0": 1.0,
        "c:q0": 1.0,
        "d:q0": 0.0,  # its own fold would have chosen s2 (1.0): the choice never reads it
    }
    assert 0.0 < row["p"] <= 1.0
    assert row["ci_low"] <= 0.75 <= row["ci_high"]


def test_subset_is_reported_not_chosen_on() -> None:
    row, _ = lever_cv(_per_query(), "base", ["s1", "s2"], folds=4, subset=["d:q0"])
    assert (row["queries"], row["base"], row["with_lever"], row["delta"]) == (1, 0.0, 0.0, 0.0)
    assert row["p"] == 1.0


def test_one_setting_fixed_in_advance() -> None:
    row, _ = lever_cv(_per_query(), "base", ["s2"], folds=2)
    assert (row["with_lever"], row["delta"]) == (0.25, 0.25)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="at least one setting"):
        lever_cv(_per_query(), "base", [])
    with pytest.raises(ValueError, match="no recall@5 for 4 queries"):
        metric_matrix(_per_query(), ["nope"], "recall@5", IDS)
    one = _per_query().filter(pl.col("query_id") == "a:q0")
    with pytest.raises(ValueError, match="cannot make 2 folds"):
        lever_cv(one, "base", ["s1"])


def test_holm_over_the_rows_with_a_p() -> None:
    rows = holm_rows([{"p": 0.01}, {"p": 0.04}, {"p": None}, {"p": 0.03}])
    assert [r["p_holm"] for r in rows] == pytest.approx([0.03, 0.06, None, 0.06])
