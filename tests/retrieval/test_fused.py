"""Views' doc rankings fused through convlab.fusion, values worked out by hand."""

from __future__ import annotations

import pytest

from convlab.protocols import Candidates
from convlab.retrieval.fused import fused_docs


def test_two_views_fused_by_rrf_by_hand() -> None:
    # query 0: dense ranks a (row 0), b (row 1); BM25 ranks b (row 5), c (row 6)
    # b: 1/(60+2) + 1/(60+1); a: 1/61; c: 1/62. b keeps BM25's unit: rank 1 there, 2 in dense
    # query 1: only BM25 found d (row 9): 1/61; query 2: nothing anywhere
    dense = [Candidates.of([0, 1], [0.9, 0.8], ["a", "b"]), None, None]
    bm25 = [Candidates.of([5, 6], [7.0, 3.0], ["b", "c"]), Candidates.of([9], [2.0], ["d"]), None]
    got = fused_docs([dense, bm25], method="rrf", k=60.0)
    first, second, third = got
    assert first is not None
    assert second is not None
    assert first.docs == ("b", "a", "c")
    assert first.rows.tolist() == [5, 0, 6]
    assert first.scores.tolist() == pytest.approx([1 / 62 + 1 / 61, 1 / 61, 1 / 62])
    assert (second.docs, second.rows.tolist()) == (("d",), [9])
    assert second.scores.tolist() == pytest.approx([1 / 61])
    assert third is None


def test_equal_ranks_keep_the_first_views_unit_and_weights_count() -> None:
    dense = [Candidates.of([3], [0.5], ["a"])]
    bm25 = [Candidates.of([8], [4.0], ["a"])]
    (both,) = fused_docs([dense, bm25], method="rrf", k=0.0)
    assert both is not None
    assert (both.rows.tolist(), both.scores.tolist()) == ([3], [2.0])  # 1/1 + 1/1, dense's unit
    (weighted,) = fused_docs([dense, bm25], method="rrf", weights=[1.0, 3.0], k=1.0)
    assert weighted is not None
    assert weighted.scores.tolist() == pytest.approx([1 / 2 + 3 / 2])


def test_the_hybrid_fusion_is_an_option_checked_against_the_registry() -> None:
    from convlab.retrieval import SearchOptions

    options = SearchOptions.of(
        retrieval="hybrid", fusion="convex", fusion_params={"norm": "z-score"}
    )
    assert options.scoring == "convex"
    assert SearchOptions.of(retrieval="hybrid").scoring == "rrf"  # the default, k 60 (rrf's own)
    assert options.replace(k=3).retrieval.fusion_params == {"norm": "z-score"}
    assert hash(options) == hash(options.replace())  # options stay hashable
    with pytest.raises(ValueError, match="unknown fusion 'nope'; valid: combmnz, combsum"):
        SearchOptions.of(fusion="nope")
    with pytest.raises(ValueError, match="fusion rrf takes no parameter 'norm'; it takes k"):
        SearchOptions.of(fusion="rrf", fusion_params={"norm": "z-score"})
