"""Multi-view systems: fusion of the views' doc rankings, and weights chosen without leakage."""

from __future__ import annotations

import polars as pl
import pytest

from convlab.evaluation.multiview import tuned_hits
from convlab.systems.hits import fused_hits
from convlab.systems.system import System, Tuning


def _hits(view: str, rows: list[tuple[str, str, int]]) -> pl.DataFrame:
    """Hits of one view: (query, doc, rank); the unit names its view and doc."""
    return pl.DataFrame(
        {
            "query_id": [q for q, _, _ in rows],
            "rank": pl.Series([r for _, _, r in rows], dtype=pl.Int32),
            "score": [1.0 / r for _, _, r in rows],
            "unit_id": [f"{view}:{d}" for _, d, _ in rows],
            "doc_id": [d for _, d, _ in rows],
        }
    )


def test_fused_hits_rank_by_weighted_rrf_and_keep_the_best_views_unit() -> None:
    a = _hits("a", [("q", "d1", 1), ("q", "d2", 2)])
    b = _hits("b", [("q", "d2", 1), ("q", "d3", 2)])
    # RRF, k=0, weights 1 and 2: d1 = 1/1 = 1; d2 = 1/2 + 2/1 = 2.5; d3 = 2/2 = 1
    # (d1 and d3 tie at 1: the doc id breaks it)
    out = fused_hits([a, b], [1.0, 2.0], method="rrf", params={"k": 0}, depth=10)
    assert out["doc_id"].to_list() == ["d2", "d1", "d3"]
    assert out["score"].to_list() == [2.5, 1.0, 1.0]
    # d2 is ranked 1 by view b and 2 by view a: its unit is b's
    assert out["unit_id"].to_list() == ["b:d2", "a:d1", "b:d3"]
    assert out.columns == a.columns
    assert out.schema["rank"] == pl.Int32


def test_fused_hits_cut_at_depth_and_leave_out_a_zero_weight_views_docs() -> None:
    a = _hits("a", [("q", "d1", 1), ("q", "d2", 2)])
    b = _hits("b", [("q", "d2", 1), ("q", "d3", 2)])
    out = fused_hits([a, b], [1.0, 0.0], method="rrf", params={"k": 0}, depth=1)
    assert out["doc_id"].to_list() == ["d1"]
    out = fused_hits([a, b], [1.0, 0.0], method="rrf", params={"k": 0}, depth=10)
    assert out["unit_id"].to_list() == ["a:d1", "a:d2"]  # d3 came only from b


def _crossed() -> tuple[list[pl.DataFrame], pl.DataFrame]:
    """Conversation a: view 1 ranks the relevant doc first; conversation b: view 0 does."""
    v0 = _hits("v0", [("a:q", "ja", 1), ("a:q", "ra", 2), ("b:q", "rb", 1), ("b:q", "jb", 2)])
    v1 = _hits("v1", [("a:q", "ra", 1), ("a:q", "ja", 2), ("b:q", "jb", 1), ("b:q", "rb", 2)])
    queries = pl.DataFrame(
        {"query_id": ["a:q", "b:q"], "conversation_id": ["a", "b"], "relevant": [["ra"], ["rb"]]}
    )
    return [v0, v1], queries


def test_tuned_hits_are_held_out_each_fold_chooses_on_the_other_conversation() -> None:
    # RRF k=1: the doc view 0 puts first scores 1/2 + w/3, view 1's first 1/3 + w/2, so
    # w = 0.5 favours view 0 (0.667 > 0.583) and w = 2 favours view 1 (1.333 > 1.167).
    # Conversation a needs w = 2, b needs w = 0.5; with two folds each is tested under the
    # other's choice, so both held-out rankings put the junk doc first.
    views, queries = _crossed()
    system = System(
        name="f",
        views=("message", "sequential"),
        fusion="rrf",
        fusion_params={"k": 1},
        tuning=Tuning(weights=(0.5, 2.0), metric="recall@1", folds=2),
    )
    tuned = tuned_hits(system, views, queries, depth=10)
    first = tuned.hits.filter(pl.col("rank") == 1).sort("query_id")
    assert first["doc_id"].to_list() == ["ja", "jb"]
    chosen = dict(zip(tuned.choices["test_groups"], tuned.choices["params"], strict=True))
    assert chosen == {"a": '{"w1": 0.5}', "b": '{"w1": 2.0}'}
    assert tuned.folds == 2
    # in-sample both settings tie at 0.5: the first of the space is what to ship
    assert tuned.chosen == {"weights": [1.0, 0.5], "params": {}, "cv": True}


def test_tuned_hits_with_one_conversation_use_the_fixed_weights_and_say_so() -> None:
    views, queries = _crossed()
    one = queries.with_columns(pl.lit("a").alias("conversation_id"))
    system = System(
        name="f",
        views=("message", "sequential"),
        fusion="rrf",
        fusion_params={"k": 1},
        weights=(1.0, 2.0),
        tuning=Tuning(weights=(0.5, 2.0), metric="recall@1", folds=2),
    )
    tuned = tuned_hits(system, views, one, depth=10)
    assert tuned.folds == 0
    assert tuned.chosen["cv"] is False
    assert tuned.hits.filter(pl.col("rank") == 1)["doc_id"].to_list() == ["ra", "jb"]


def test_tuned_hits_with_haystacks_make_each_question_its_own_group() -> None:
    # both queries named one conversation: one group, no CV; with their own haystacks each
    # question is its own group, so the two folds of the crossed test come back
    views, queries = _crossed()
    one = queries.with_columns(pl.lit("a").alias("conversation_id"))
    system = System(
        name="f",
        views=("message", "sequential"),
        fusion="rrf",
        fusion_params={"k": 1},
        tuning=Tuning(weights=(0.5, 2.0), metric="recall@1", folds=2),
    )
    tuned = tuned_hits(system, views, one, depth=10, haystacks=True)
    assert tuned.folds == 2
    assert sorted(tuned.choices["test_groups"].to_list()) == ["a:q", "b:q"]


def test_tuned_hits_need_tuning() -> None:
    views, queries = _crossed()
    with pytest.raises(ValueError, match="has no tuning"):
        tuned_hits(System(name="f", views=("message", "sequential")), views, queries, depth=10)
