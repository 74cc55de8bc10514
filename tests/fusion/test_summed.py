"""``summed``: the weighted sum and hit count CombSUM and CombMNZ share, worked out by hand."""

from __future__ import annotations

import polars as pl

from convlab.fusion.base import summed

A = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["d1", "d2"], "score": [1.0, 3.0]})
B = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["d1", "d3"], "score": [2.5, 4.0]})


def values(runs: list[pl.DataFrame], weights: list[float] | None) -> dict[str, tuple[float, float]]:
    wide, total, hits = summed(runs, weights, "none")
    rows = wide.select("doc_id", total.alias("t"), hits.alias("h")).rows()
    return {d: (t, h) for d, t, h in rows}


def test_weighted_sum_and_hits() -> None:
    # d1: 2*1 + 1*2.5 = 4.5 in 2 runs; d2: 2*3 = 6 in 1; d3: 1*4 = 4 in 1
    assert values([A, B], [2.0, 1.0]) == {"d1": (4.5, 2.0), "d2": (6.0, 1.0), "d3": (4.0, 1.0)}


def test_a_run_of_weight_zero_is_left_out_of_sum_and_count() -> None:
    assert values([A, B], [1.0, 0.0]) == {"d1": (1.0, 1.0), "d2": (3.0, 1.0)}


def test_min_max_normalises_each_run_before_the_sum() -> None:
    # A min-max: d1 0, d2 1; B: d1 0, d3 1
    wide, total, _ = summed([A, B], None, "min-max")
    got = dict(wide.select("doc_id", total).rows())
    assert got == {"d1": 0.0, "d2": 1.0, "d3": 1.0}
