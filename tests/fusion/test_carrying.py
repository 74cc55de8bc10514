"""fuse_carrying: the one fusion of views (hybrid search and systems), values worked by hand."""

from __future__ import annotations

import polars as pl
import pytest

from convlab.fusion import FUSIONS, carried, check_params, describe, fuse_carrying


def view(rows: list[tuple[str, str, int, str]]) -> pl.DataFrame:
    """``(query, doc, rank, unit)`` rows; the score falls with the rank."""
    return pl.DataFrame(
        [(q, d, 10.0 - r, r, u) for q, d, r, u in rows],
        schema={
            "query_id": pl.String,
            "doc_id": pl.String,
            "score": pl.Float64,
            "rank": pl.Int64,
            "unit": pl.String,
        },
        orient="row",
    )


def test_each_doc_carries_the_unit_of_the_view_that_ranked_it_best() -> None:
    dense = view([("q", "a", 1, "dense-a"), ("q", "b", 2, "dense-b")])
    bm25 = view([("q", "b", 1, "bm25-b"), ("q", "c", 2, "bm25-c"), ("q", "a", 3, "bm25-a")])
    got = fuse_carrying([dense, bm25], method="rrf", k=0)
    # a: 1/1 + 1/3; b: 1/2 + 1/1; c: 1/2. b from BM25 (rank 1 < 2), a from dense (1 < 3)
    assert got.columns == ["query_id", "doc_id", "score", "rank", "unit"]
    assert got["doc_id"].to_list() == ["b", "a", "c"]
    assert got["score"].to_list() == pytest.approx([1.5, 4 / 3, 0.5])
    assert got["rank"].to_list() == [1, 2, 3]
    assert got["unit"].to_list() == ["bm25-b", "dense-a", "bm25-c"]


def test_equal_ranks_carry_the_first_views_unit_and_a_zero_weight_view_carries_none() -> None:
    one = view([("q", "a", 1, "one-a")])
    two = view([("q", "a", 1, "two-a"), ("q", "z", 2, "two-z")])
    assert fuse_carrying([one, two], method="rrf", k=0)["unit"].to_list()[0] == "one-a"
    # view one of weight 0: its unit is not carried, and only docs of view two count
    got = fuse_carrying([one, two], [0.0, 1.0], method="rrf", k=0)
    assert got["unit"].to_list() == ["two-a", "two-z"]
    fused = pl.DataFrame(
        {"query_id": ["q"], "doc_id": ["a"], "score": [1.0], "rank": [1]},
        schema_overrides={"rank": pl.Int32},
    )
    assert carried(fused, [one, two], [0.0, 1.0])["unit"].to_list() == ["two-a"]


def test_depth_cuts_each_query() -> None:
    a = view([("q1", "x", 1, "u"), ("q1", "y", 2, "v"), ("q2", "z", 1, "w")])
    got = fuse_carrying([a], method="rrf", depth=1, k=0)
    assert got.select("query_id", "doc_id").rows() == [("q1", "x"), ("q2", "z")]


def test_describe_and_check_params_read_the_method() -> None:
    assert describe("rrf").startswith("Weighted reciprocal rank fusion")
    check_params("rrf", {"k": 10})
    check_params("convex", {"norm": "z-score"})
    with pytest.raises(ValueError, match="fusion rrf takes no parameter 'norm'; it takes k"):
        check_params("rrf", {"norm": "min-max"})
    with pytest.raises(ValueError, match="norm 'l2' is not one of none, min-max, z-score"):
        check_params("convex", {"norm": "l2"})
    with pytest.raises(ValueError, match="k nan is not a finite number"):
        check_params("rrf", {"k": float("nan")})
    with pytest.raises(ValueError, match="valid: " + ", ".join(FUSIONS.names())):
        check_params("nope", {})
