"""The routing study's tests by category, means and classifier accuracy, worked out by hand."""

from __future__ import annotations

import polars as pl
import pytest

from convlab.studies.routing_report import accuracy, means, paired_tests


def test_tests_holm_adjust_overall_and_per_category() -> None:
    ids = [f"q{i}" for i in range(4)]
    per_q = pl.DataFrame(
        {
            "system": ["base"] * 4 + ["r"] * 4,
            "query_id": ids * 2,
            "metric": ["recall@5"] * 8,
            "value": [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0],
        }
    )
    cats = pl.DataFrame({"query_id": ids, "category": ["temporal"] * 2 + ["multi-hop"] * 2})
    out = paired_tests(per_q, cats, "base", ["r"])
    rows = {r["subset"]: r for r in out.iter_rows(named=True)}
    assert rows["all"]["delta"] == pytest.approx(0.75 - 0.5)
    assert rows["temporal"]["delta"] == pytest.approx(1.0)
    assert rows["multi-hop"]["delta"] == pytest.approx(-0.5)
    assert rows["all"]["p_holm"] == rows["all"]["p"]  # one system: nothing to adjust
    ps = sorted([rows["temporal"]["p"], rows["multi-hop"]["p"]])
    assert min(rows["temporal"]["p_holm"], rows["multi-hop"]["p_holm"]) == pytest.approx(
        min(1.0, 2 * ps[0])
    )


def test_accuracy_per_type_and_confusion() -> None:
    # 4 queries: x, x, y, y predicted x, y, y, y: 3 of 4 right; x's recall 1/2, y's 2/2
    got = accuracy(["x", "x", "y", "y"], ["x", "y", "y", "y"])
    assert got["accuracy"] == 0.75
    assert got["per_type_recall"] == {"x": 0.5, "y": 1.0}
    assert got["confusion"] == [
        {"gold": "x", "predicted": "x", "len": 1},
        {"gold": "x", "predicted": "y", "len": 1},
        {"gold": "y", "predicted": "y", "len": 2},
    ]


def test_means_overall_and_per_category_in_the_systems_order() -> None:
    per_q = pl.DataFrame(
        {
            "system": ["b"] * 3 + ["a"] * 3,
            "query_id": ["q0", "q1", "q2"] * 2,
            "metric": ["recall@5"] * 6,
            "value": [1.0, 0.0, 0.0, 1.0, 1.0, 0.0],
        }
    )
    cats = pl.DataFrame({"query_id": ["q0", "q1", "q2"], "category": ["t", "t", "u"]})
    rows = [
        (r["system"], r["category"], r["mean"], r["queries"])
        for r in means(per_q, cats, ["a", "b"])
    ]
    # a: (1 + 1 + 0) / 3 overall, t (1 + 1) / 2, u 0; b: 1/3, t 1/2, u 0
    assert rows == [
        ("a", "all", pytest.approx(2 / 3), 3), ("a", "t", 1.0, 2), ("a", "u", 0.0, 1),
        ("b", "all", pytest.approx(1 / 3), 3), ("b", "t", 0.5, 2), ("b", "u", 0.0, 1),
    ]  # fmt: skip
