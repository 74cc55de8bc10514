"""Plots: one line or bar group per system, with titles, axis labels and legends."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import polars as pl
import pytest

from convlab.evaluation import plots

SUMMARY = pl.DataFrame(
    {
        "system": ["a", "a", "b", "b", "a", "b"],
        "metric": ["recall@1", "recall@5", "recall@1", "recall@5", "ndcg@10", "ndcg@10"],
        "mean": [0.1, 0.4, 0.2, 0.5, 0.3, 0.3],
    }
)


def test_recall_at_k_lines() -> None:
    fig = plots.recall_at_k(SUMMARY)
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert set(lines) == {"a", "b"}
    assert list(lines["a"].get_xdata()) == [1, 5]
    assert list(lines["b"].get_ydata()) == [0.2, 0.5]
    assert ax.get_xlabel()
    assert ax.get_ylabel()
    assert ax.get_title()


def test_coverage_and_category_bars() -> None:
    budgets = pl.DataFrame(
        {"system": ["a"] * 4, "budget": [128, 128, 256, 256], "coverage": [0.0, 1.0, 1.0, 1.0]}
    )
    ax = plots.coverage_by_budget(budgets).axes[0]
    (line,) = ax.get_lines()
    assert list(line.get_ydata()) == [0.5, 1.0]
    by_cat = pl.DataFrame(
        {
            "system": ["a", "a", "b", "b"],
            "category": ["x", "y", "x", "y"],
            "metric": ["recall@5"] * 4,
            "mean": [0.1, 0.2, 0.3, 0.4],
        }
    )
    ax = plots.recall_by_category(by_cat).axes[0]
    heights = sorted(round(p.get_height(), 3) for p in ax.patches)
    assert heights == [0.1, 0.2, 0.3, 0.4]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x", "y"]


def test_unit_map_marks_query_and_hits() -> None:
    v = np.random.default_rng(0).normal(size=(30, 8))
    fig = plots.unit_map(v, ["c1"] * 15 + ["c2"] * 15, query=v[0], hit_rows=[1, 2])
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["hits", "query"]


def test_policy_grid_draws_containment_and_coverage_against_tokens() -> None:
    means = pl.DataFrame(
        {
            "system": ["a", "a", "a", "a", "b", "b"],
            "policy": ["unit", "unit", "doc", "doc", "unit", "unit"],
            "budget": [256, 128, 128, 256, 128, 256],
            "tokens_used": [250.0, 120.0, 110.0, 240.0, 125.0, 255.0],
            "answer_contained": [0.3, 0.1, 0.2, 0.4, 0.0, 0.5],
            "coverage": [0.6, 0.5, 0.7, 0.8, 0.1, 0.2],
        }
    )
    fig = plots.policy_grid(means)
    containment, coverage = fig.axes
    lines = {ln.get_label(): ln for ln in containment.get_lines()}
    assert list(lines) == ["a + unit", "a + doc", "b + unit"]
    # a point per budget, in budget order
    assert list(lines["a + unit"].get_xdata()) == [120.0, 250.0]
    assert list(lines["a + unit"].get_ydata()) == [0.1, 0.3]
    cov = {ln.get_label(): ln for ln in coverage.get_lines()}
    assert list(cov["a + doc"].get_ydata()) == [0.7, 0.8]
    # colour per system, style per policy
    assert lines["a + unit"].get_color() == lines["a + doc"].get_color()
    assert lines["a + unit"].get_linestyle() != lines["a + doc"].get_linestyle()
    assert lines["a + unit"].get_color() != lines["b + unit"].get_color()
    assert containment.get_ylabel() == "answer containment"
    assert coverage.get_ylabel() == "evidence coverage"
    assert containment.get_xscale() == "log"
    # a policy whose points equal another's for the system is drawn once, both named
    same = pl.concat(
        [means, means.filter(pl.col("system") == "b").with_columns(pl.lit("doc").alias("policy"))]
    )
    labels = [ln.get_label() for ln in plots.policy_grid(same).axes[1].get_lines()]
    assert labels == ["a + unit", "a + doc", "b + unit = doc"]
    only_b = plots.policy_grid(means, systems=["b"]).axes[0]
    assert [ln.get_label() for ln in only_b.get_lines()] == ["b + unit"]
    with pytest.raises(
        ValueError, match=r"systems not in the grid: \['c'\]; the grid's: \['a', 'b'\]"
    ):
        plots.policy_grid(means, systems=["b", "c"])
