"""The report's system x policy grid: means marked against the reference, the efficiency test."""

from __future__ import annotations

import polars as pl

from convlab.evaluation.policy_grid import grid_significance
from convlab.evaluation.report import policy_grid_lines, units_lines
from tests.evaluation.test_policy_grid import grid_frame


def test_the_grid_table_marks_the_cells_that_differ_from_the_reference() -> None:
    grid = grid_frame()
    text = "\n".join(
        policy_grid_lines(grid, grid_significance(grid, baseline="message"), image="g.png")
    )
    lines = text.splitlines()
    assert "differs from `message` + `unit` at the same budget" in text
    assert (
        "| system | policy | budget | coverage | evidence_token_recall | answer_contained "
        "| tokens_used | redundancy | queries |" in lines
    )
    # columns: coverage (tested), evidence token recall, answer contained (tested), tokens
    # used, redundancy, queries with a coverage (the hand-worked marks of test_policy_grid)
    assert "| message | unit | 512 | 0.000 (ref) | 0.000 | 0.000 | 512 | 0.000 | 10 |" in lines
    assert "| message | doc | 512 | 1.000* | 1.000 | 0.000 | 502 | 0.250 | 10 |" in lines
    assert "| bm25:message | doc | 512 | 0.500 | 0.500 | 1.000* | 502 | 0.250 | 10 |" in lines
    assert "| bm25:message | unit | 1024 | 0.500 | 0.500 | 0.000 | 1024 | 0.000 | 10 |" in lines
    assert "| bm25:message | doc | 1024 | 1.000* | 1.000 | 1.000* | 1014 | 0.250 | 10 |" in lines
    # the efficiency question: message + doc at 512 against message + unit at 1024
    assert "the best cell at 512 tokens by coverage, `message` + `doc`, against" in text
    eff = [ln for ln in lines if ln.startswith("| coverage | 10 |")]
    assert len(eff) == 1
    assert eff[0].startswith("| coverage | 10 | 1.000 | 0.500 | +0.500 | [+0.500, +0.500] | 0.00")
    assert eff[0].endswith("* |")
    assert "![answer containment and coverage against tokens used](g.png)" in lines


def test_without_tests_or_efficiency_cells_the_report_says_so() -> None:
    grid = grid_frame().filter(pl.col("budget") == 512)
    lines = "\n".join(policy_grid_lines(grid, pl.DataFrame())).splitlines()
    assert "Means over queries (no significance tests were run)." in lines
    assert any(
        ln.startswith("Efficiency test not run: the grid needs the budgets 512") for ln in lines
    )
    assert not any("*" in ln for ln in lines if ln.startswith("| message"))
    assert not any(ln.startswith("![") for ln in lines)


COSTS = [
    {
        "strategy": "isolated",
        "units": 12,
        "units_per_message": 3.0,
        "distinct_texts": 10,
        "tokens_embedded": 150,
    },
    {"strategy": "all", "units": 12, "units_per_message": 3.0, "distinct_texts": 10},
]


def test_units_lines_give_each_strategys_cost_and_the_embedding_pass() -> None:
    cfg = {
        "units": {"isolated": 12},
        "unit_costs": [COSTS[0], {**COSTS[1], "tokens_embedded": 150}],
        "embedding": {
            "requested": 12,
            "distinct": 10,
            "from_cache": 2,
            "embedded": 8,
            "model_calls": 1,
            "seconds": 0.5,
        },
    }
    lines = "\n".join(units_lines(cfg)).splitlines()
    assert lines[:2] == ["## Units per strategy", ""]
    i = lines.index("| strategy | units | units_per_message | distinct_texts | tokens_embedded |")
    assert lines[i + 2 : i + 4] == [
        "| isolated | 12 | 3.000 | 10 | 150 |",
        "| all | 12 | 3.000 | 10 | 150 |",
    ]
    # 8 texts in 0.5 s: 16 texts/s
    assert (
        "Embedding: 10 distinct texts, 2 from the cache, 8 embedded in 0.5 s, 16 texts/s."
        in "\n".join(lines)
    )


def test_units_lines_of_a_run_recorded_before_costs_list_the_units() -> None:
    lines = units_lines({"units": {"isolated": 12, "message": 4}})
    assert lines == [
        "## Units per strategy",
        "",
        "| strategy | units |\n|---|---|\n| isolated | 12 |\n| message | 4 |",
        "",
    ]
