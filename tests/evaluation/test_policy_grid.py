"""The system x policy grid: means, tests against the reference cell, the efficiency test.

The grid below is written by hand. Ten queries, two systems (``message`` is the baseline), two
policies, two budgets. A cell that beats the reference on all ten queries by the same amount has
an exact two-sided randomization p of 2 / 2**10 (only the all-plus and all-minus sign patterns
reach the observed mean), nine queries 2 / 2**9, five 2 / 2**5 = 0.0625; the test samples 10,000
sign patterns, so the p-values are near those.
"""

from __future__ import annotations

import polars as pl
import pytest

from convlab.evaluation.policy_grid import (
    efficiency_test,
    grid_means,
    grid_significance,
    plot_systems,
    reference_cell,
)

QUERIES = [f"q{i}" for i in range(10)]

# coverage per (system, policy, budget): one value for every query, or a list per query
COVERAGE: dict[tuple[str, str, int], float | list[float]] = {
    ("message", "unit", 512): 0.0,  # the reference cell at 512
    ("message", "unit", 1024): 0.5,  # ... at 1024, and the efficiency question's reference
    ("message", "doc", 512): 1.0,  # +1 on all ten: p ~ 2/1024
    ("message", "doc", 1024): 1.0,  # +0.5 on all ten: p ~ 2/1024
    ("bm25:message", "unit", 512): 0.0,  # equal to the reference: p = 1
    ("bm25:message", "unit", 1024): 0.5,
    ("bm25:message", "doc", 512): [1.0] * 5 + [0.0] * 5,  # +1 on five: p ~ 2/32
    ("bm25:message", "doc", 1024): 1.0,
}
# answer containment on q0..q8 (q9 has no answer: None everywhere)
ANSWER: dict[tuple[str, str, int], float] = {
    ("message", "unit", 512): 0.0,
    ("message", "unit", 1024): 0.0,
    ("message", "doc", 512): 0.0,  # equal to the reference although its coverage is higher
    ("message", "doc", 1024): 1.0,  # +1 on nine: p ~ 2/512
    ("bm25:message", "unit", 512): 0.0,
    ("bm25:message", "unit", 1024): 0.0,
    ("bm25:message", "doc", 512): 1.0,
    ("bm25:message", "doc", 1024): 1.0,
}


def grid_frame() -> pl.DataFrame:
    """The per-query grid of the module doc (``Evaluation.policy_budgets``'s columns)."""
    rows = []
    for (system, policy, budget), cov in COVERAGE.items():
        values = cov if isinstance(cov, list) else [cov] * len(QUERIES)
        for i, (q, c) in enumerate(zip(QUERIES, values, strict=True)):
            rows.append(
                {
                    "query_id": q,
                    "budget": budget,
                    "coverage": c,
                    "evidence_token_recall": c,
                    "tokens_used": budget - 10 * (policy == "doc"),
                    "answer_contained": None if i == 9 else ANSWER[(system, policy, budget)],
                    "redundancy": 0.25 if policy == "doc" else 0.0,
                    "hits_used": 1,
                    "hits_skipped": 0,
                    "system": system,
                    "policy": policy,
                }
            )
    return pl.DataFrame(rows, schema_overrides={"budget": pl.Int32, "tokens_used": pl.Int32})


def test_means_are_over_the_queries_where_the_measure_is_defined() -> None:
    means = grid_means(grid_frame())
    assert means.select("system", "policy", "budget").rows()[:3] == [
        ("message", "unit", 512),
        ("message", "unit", 1024),
        ("message", "doc", 512),
    ]
    row = means.filter(
        (pl.col("system") == "bm25:message")
        & (pl.col("policy") == "doc")
        & (pl.col("budget") == 512)
    ).row(0, named=True)
    assert row["coverage"] == 0.5  # five of ten
    assert row["answer_contained"] == 1.0  # nine of nine (q9 has no answer)
    assert row["tokens_used"] == 502.0
    assert row["redundancy"] == 0.25
    assert row["queries"] == 10


def _marked(sig: pl.DataFrame, metric: str) -> set[tuple[str, str, int]]:
    return set(
        sig.filter(
            (pl.col("test") == "grid") & (pl.col("metric") == metric) & pl.col("significant")
        )
        .select("system", "policy", "budget")
        .rows()
    )


def test_cells_are_marked_against_the_reference_cell_with_holm_over_the_grid() -> None:
    sig = grid_significance(grid_frame(), baseline="message")
    grid = sig.filter(pl.col("test") == "grid")
    assert grid.height == 2 * 2 * 4  # measures x budgets x cells
    assert set(grid.select("reference_system", "reference_policy").rows()) == {("message", "unit")}
    assert _marked(sig, "coverage") == {
        ("message", "doc", 512),
        ("message", "doc", 1024),
        ("bm25:message", "doc", 1024),
    }
    assert _marked(sig, "answer_contained") == {
        ("message", "doc", 1024),
        ("bm25:message", "doc", 512),
        ("bm25:message", "doc", 1024),
    }
    five = grid.filter(
        (pl.col("metric") == "coverage")
        & (pl.col("system") == "bm25:message")
        & (pl.col("policy") == "doc")
        & (pl.col("budget") == 512)
    ).row(0, named=True)
    assert 0.045 < five["p_randomization"] < 0.08  # 2/32 = 0.0625, sampled
    # Holm over the grid's six tested cells: the 4th smallest p times 6 - 3 (per budget it would
    # be times 2)
    assert five["p_holm"] == pytest.approx(3 * five["p_randomization"])
    assert (five["mean"], five["reference_mean"], five["delta"]) == (0.5, 0.0, 0.5)
    ref = grid.filter((pl.col("system") == "message") & (pl.col("policy") == "unit"))
    assert ref["p_holm"].to_list() == [1.0] * 4
    assert not ref["significant"].any()
    answer = grid.filter(pl.col("metric") == "answer_contained")
    assert set(answer["queries"]) == {9}  # q9's missing answer is left out, not counted as 0


def test_the_efficiency_test_pairs_the_best_cell_at_512_with_message_unit_at_1024() -> None:
    eff = efficiency_test(grid_frame())
    cov = eff.filter(pl.col("metric") == "coverage").row(0, named=True)
    # best at 512 by coverage: message + doc (1.0) over bm25:message + doc (0.5)
    assert (cov["system"], cov["policy"], cov["budget"]) == ("message", "doc", 512)
    assert (cov["reference_system"], cov["reference_policy"], cov["reference_budget"]) == (
        "message",
        "unit",
        1024,
    )
    assert (cov["mean"], cov["reference_mean"], cov["delta"]) == (1.0, 0.5, 0.5)
    assert (cov["delta_ci_low"], cov["delta_ci_high"]) == (0.5, 0.5)  # the same on every query
    assert cov["p_randomization"] < 0.005  # 2/1024, sampled
    assert cov["significant"]
    ans = eff.filter(pl.col("metric") == "answer_contained").row(0, named=True)
    assert (ans["queries"], ans["mean"], ans["reference_mean"]) == (9, 0.0, 0.0)
    assert ans["p_randomization"] == 1.0
    assert not ans["significant"]
    in_grid = grid_significance(grid_frame(), baseline="message").filter(
        pl.col("test") == "efficiency"
    )
    assert (
        in_grid.select("metric", "system", "delta").rows()
        == eff.select("metric", "system", "delta").rows()
    )


def test_no_efficiency_test_without_its_reference_or_budgets() -> None:
    no_1024 = grid_frame().filter(pl.col("budget") == 512)
    assert efficiency_test(no_1024).height == 0
    no_message = grid_frame().filter(pl.col("system") != "message")
    assert efficiency_test(no_message).height == 0


def test_the_reference_cell_is_the_baseline_with_unit() -> None:
    assert reference_cell(grid_frame(), "bm25:message") == ("bm25:message", "unit")
    doc_only = grid_frame().filter(pl.col("policy") == "doc")
    assert reference_cell(doc_only, "message") == ("message", "doc")
    with pytest.raises(ValueError, match=r"baseline 'nope' is not in the grid; its systems: \["):
        grid_significance(grid_frame(), baseline="nope")


def test_plot_systems_are_the_baseline_message_and_the_best_by_coverage_at_512() -> None:
    rows = [
        # system, policy, coverage at 512
        ("base", "unit", 0.1),
        ("message", "unit", 0.2),
        ("a", "unit", 0.3),
        ("a", "doc", 0.9),  # a's best policy counts
        ("b", "unit", 0.8),
        ("c", "unit", 0.5),
        ("d", "unit", 0.4),
    ]
    pb = pl.DataFrame(
        [
            {"system": s, "policy": p, "query_id": "q", "budget": 512, "coverage": c}
            for s, p, c in rows
        ]
    )
    assert plot_systems(pb, baseline="base") == ["base", "message", "a", "b", "c"]
    assert plot_systems(pb, baseline="d", top=1) == ["message", "a", "d"]
    # no 512 in the grid: the nearest budget decides
    assert plot_systems(pb.with_columns(pl.lit(500).alias("budget")), baseline=None, top=2) == [
        "message",
        "a",
        "b",
    ]
