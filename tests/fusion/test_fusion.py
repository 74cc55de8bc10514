"""Fusion methods: expected values worked by hand, ties, validation, and the reference ranx."""

from __future__ import annotations

import math

import polars as pl
import pytest

from convlab.fusion import FUSIONS, fuse
from convlab.fusion.combmnz import combmnz
from convlab.fusion.combsum import combsum
from convlab.fusion.convex import convex
from convlab.fusion.rrf import rrf


def run(rows: dict[str, dict[str, float]]) -> pl.DataFrame:
    """A run frame from ``{query: {doc: score}}`` (ranx's dict layout)."""
    out = [(q, d, float(s)) for q, docs in rows.items() for d, s in docs.items()]
    return pl.DataFrame(out, schema=["query_id", "doc_id", "score"], orient="row")


# ranx's tests/unit/ranx/fusion fixtures: three runs over two queries
RUN_1 = {"q1": {"d1": 1, "d2": 2, "d3": 3}, "q2": {"d1": 1, "d2": 2}}
RUN_2 = {"q1": {"d1": 3, "d2": 2}, "q2": {"d1": 1, "d3": 3}}
RUN_3 = {"q1": {"d3": 1}, "q2": {"d2": 2, "d3": 3}}


def as_dict(fused: pl.DataFrame) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for q, d, s in fused.select("query_id", "doc_id", "score").iter_rows():
        out.setdefault(q, {})[d] = s
    return out


def runs3() -> list[pl.DataFrame]:
    return [run(RUN_1), run(RUN_2), run(RUN_3)]


def test_registry_names() -> None:
    assert FUSIONS.names() == ("combmnz", "combsum", "convex", "rrf")


def test_rrf_by_hand() -> None:
    # ranks: run1 q1 d3,d2,d1 (scores 3,2,1); run2 q1 d1,d2; run3 q1 d3
    got = as_dict(rrf(runs3()))
    assert got["q1"]["d1"] == pytest.approx(1 / (60 + 3) + 1 / (60 + 1))
    assert got["q1"]["d2"] == pytest.approx(1 / (60 + 2) + 1 / (60 + 2))
    assert got["q1"]["d3"] == pytest.approx(1 / (60 + 1) + 1 / (60 + 1))
    # q2: run1 d2,d1; run2 d3,d1; run3 d3,d2
    assert got["q2"]["d1"] == pytest.approx(1 / (60 + 2) + 1 / (60 + 2))
    assert got["q2"]["d2"] == pytest.approx(1 / (60 + 1) + 1 / (60 + 2))
    assert got["q2"]["d3"] == pytest.approx(1 / (60 + 1) + 1 / (60 + 1))


def test_weighted_rrf_by_hand_and_order() -> None:
    fused = rrf(runs3(), [2.0, 0.5, 1.0], k=10)
    q1 = fused.filter(pl.col("query_id") == "q1")
    # d1: 2/13 + .5/11 = .19930; d2: 2/12 + .5/12 = .20833; d3: 2/11 + 1/11 = .27273
    assert q1["doc_id"].to_list() == ["d3", "d2", "d1"]
    assert q1["score"].to_list() == pytest.approx([3 / 11, 2.5 / 12, 2 / 13 + 0.5 / 11])
    assert q1["rank"].to_list() == [1, 2, 3]


def test_rrf_uses_given_ranks_over_scores() -> None:
    a = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["x", "y"], "score": [1.0, 9.0]})
    ranked = a.with_columns(pl.Series("rank", [1, 2]))
    assert rrf([a], k=0)["doc_id"].to_list() == ["y", "x"]
    assert rrf([ranked], k=0)["doc_id"].to_list() == ["x", "y"]


def test_zero_weight_leaves_the_run_out() -> None:
    fused = rrf(runs3(), [1.0, 1.0, 0.0])
    # run3 alone retrieves nothing new, but with weight 0 d3 of q1 keeps only run1's term
    assert as_dict(fused)["q1"]["d3"] == pytest.approx(1 / 61)
    only = rrf([run({"q": {"a": 1}}), run({"q": {"b": 1}})], [1.0, 0.0])
    assert only["doc_id"].to_list() == ["a"]


def test_convex_min_max_by_hand() -> None:
    # min-max per query: run1 q1 d1 0, d2 .5, d3 1; run2 q1 d1 1, d2 0; run3 q1 d3 0 (one doc)
    # weights 1,1,2 -> /4; absent docs take the run's floor (0)
    got = as_dict(convex(runs3(), [1.0, 1.0, 2.0]))
    assert got["q1"]["d1"] == pytest.approx((0 + 1 + 0) / 4)
    assert got["q1"]["d2"] == pytest.approx((0.5 + 0 + 0) / 4)
    assert got["q1"]["d3"] == pytest.approx((1 + 0 + 0) / 4)
    # q2: run1 d1 0 d2 1; run2 d1 0 d3 1; run3 d2 0 d3 1
    assert got["q2"]["d1"] == pytest.approx(0.0)
    assert got["q2"]["d2"] == pytest.approx((1 + 0 + 0) / 4)
    assert got["q2"]["d3"] == pytest.approx((0 + 1 + 2) / 4)


def test_convex_z_score_floor_for_absent_docs() -> None:
    a = run({"q": {"d1": 3.0, "d2": 1.0}})  # mean 2, sd 1 -> z 1, -1
    b = run({"q": {"d1": 0.0, "d2": 1.0, "d3": 5.0}})  # mean 2, sd sqrt(14/3)
    sd = math.sqrt(((0 - 2) ** 2 + (1 - 2) ** 2 + (5 - 2) ** 2) / 3)
    got = as_dict(convex([a, b], norm="z-score"))["q"]
    assert got["d1"] == pytest.approx((1 + (0 - 2) / sd) / 2)
    assert got["d2"] == pytest.approx((-1 + (1 - 2) / sd) / 2)
    # d3 is absent from a: it takes a's lowest z (-1), not the average 0
    assert got["d3"] == pytest.approx((-1 + (5 - 2) / sd) / 2)


def test_combsum_and_combmnz_by_hand() -> None:
    s = as_dict(combsum(runs3()))
    assert s["q1"] == pytest.approx({"d1": 1 + 3, "d2": 2 + 2, "d3": 3 + 1})
    assert s["q2"] == pytest.approx({"d1": 1 + 1, "d2": 2 + 2, "d3": 3 + 3})
    m = as_dict(combmnz(runs3()))
    assert m["q1"] == pytest.approx({"d1": 4 * 2, "d2": 4 * 2, "d3": 4 * 2})
    assert m["q2"] == pytest.approx({"d1": 2 * 2, "d2": 4 * 2, "d3": 6 * 2})
    w = as_dict(combmnz(runs3(), [1.0, 0.5, 2.0], norm="min-max"))
    # min-max: q2 run1 d1 0 d2 1; run2 d1 0 d3 1; run3 d2 0 d3 1; a doc at 0 still counts
    assert w["q2"] == pytest.approx({"d1": 2 * 0.0, "d2": 2 * 1.0, "d3": 2 * (0.5 + 2.0)})


def test_ties_broken_by_doc_id() -> None:
    # combsum q1: d1, d2, d3 all 4 -> doc_id order
    q1 = combsum(runs3()).filter(pl.col("query_id") == "q1")
    assert q1["doc_id"].to_list() == ["d1", "d2", "d3"]
    reordered = [r.reverse() for r in runs3()][::-1]
    again = combsum(reordered).filter(pl.col("query_id") == "q1")
    assert again["doc_id"].to_list() == ["d1", "d2", "d3"]


def test_fuse_dispatch_and_depth() -> None:
    out = fuse(runs3(), method="convex", norm="min-max", depth=2)
    assert out.group_by("query_id").len().sort("query_id")["len"].to_list() == [2, 2]
    assert out.columns == ["query_id", "doc_id", "score", "rank"]
    with pytest.raises(ValueError, match="unknown fusion 'borda'; valid: combmnz"):
        fuse(runs3(), method="borda")
    with pytest.raises(ValueError, match="depth is 0"):
        fuse(runs3(), depth=0)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ([1.0, 1.0], "2 weights for 3 runs"),
        ([1.0, -1.0, 1.0], "weight 1 is -1.0"),
        ([0.0, 0.0, 0.0], "every weight is 0"),
        ([1.0, math.nan, 1.0], "weight 1 is nan"),
    ],
)
def test_bad_weights(weights: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rrf(runs3(), weights)


def test_bad_runs() -> None:
    with pytest.raises(ValueError, match="at least one run"):
        combsum([])
    with pytest.raises(ValueError, match=r"run 1 lacks column\(s\) score"):
        combsum([run(RUN_1), run(RUN_2).drop("score")])
    dup = pl.concat([run(RUN_1), run({"q1": {"d1": 5}})])
    with pytest.raises(ValueError, match=r"run 0 scores \(q1, d1\) more than once"):
        combsum([dup])
    inf = run({"q": {"a": math.inf}})
    with pytest.raises(ValueError, match=r"run 0: score of \(q, a\) is inf"):
        convex([inf])
    with pytest.raises(ValueError, match="unknown norm 'l2'; valid: none, min-max, z-score"):
        convex(runs3(), norm="l2")
    with pytest.raises(ValueError, match="rrf k is -1"):
        rrf(runs3(), k=-1)


def test_inputs_not_mutated() -> None:
    runs = runs3()
    before = [r.clone() for r in runs]
    convex(runs, norm="z-score")
    assert all(a.equals(b) for a, b in zip(runs, before, strict=True))


# docs every run retrieves, for z-score, where ranx gives an absent doc 0 (an average z) and
# convlab the run's floor
FULL_1 = {"q1": {"d1": 1, "d2": 4, "d3": 2}, "q2": {"d1": 0.5, "d2": 0.25}}
FULL_2 = {"q1": {"d1": 3, "d2": 1, "d3": 0.5}, "q2": {"d1": 2, "d2": 7}}
FULL_3 = {"q1": {"d1": 0.1, "d2": 0.7, "d3": 0.2}, "q2": {"d1": 1, "d2": 1}}


@pytest.mark.parametrize(
    ("ours", "theirs", "params", "fixtures"),
    [
        ("rrf", "rrf", {}, (RUN_1, RUN_2, RUN_3)),
        ("combsum", "sum", {"norm": "min-max"}, (RUN_1, RUN_2, RUN_3)),
        ("combmnz", "mnz", {"norm": "min-max"}, (RUN_1, RUN_2, RUN_3)),
        ("convex", "wsum", {"norm": "min-max"}, (RUN_1, RUN_2, RUN_3)),
        ("convex", "wsum", {"norm": "z-score"}, (FULL_1, FULL_2, FULL_3)),
    ],
)
def test_against_ranx(
    ours: str, theirs: str, params: dict[str, str], fixtures: tuple[dict, ...]
) -> None:
    import ranx as rx  # the dev extra's reference implementation

    norm = {"min-max": "min-max", "z-score": "zmuv"}.get(params.get("norm", ""), "min-max")
    weights = [0.5, 0.3, 0.2] if theirs == "wsum" else None
    rx_params = {"weights": weights} if weights else {}
    expected = rx.fuse(
        [rx.Run(r) for r in fixtures], norm=norm, method=theirs, params=rx_params
    ).to_dict()
    got = as_dict(fuse([run(r) for r in fixtures], weights, method=ours, **params))
    assert set(got) == set(expected)
    for q, docs in expected.items():
        assert got[q] == pytest.approx(docs), q


@pytest.mark.parametrize(
    ("method", "params"),
    [("rrf", {"k": 1}), ("convex", {"norm": "z-score"}), ("combsum", {}), ("combmnz", {})],
)
def test_runs_aligned_once_fuse_like_the_list_under_every_weighting(
    method: str, params: dict
) -> None:
    from convlab.fusion import Aligned

    a = pl.DataFrame({"query_id": ["q"] * 3, "doc_id": ["d1", "d2", "d3"], "score": [3.0, 2, 1]})
    b = pl.DataFrame(
        {"query_id": ["q", "q", "r"], "doc_id": ["d3", "d4", "d1"], "score": [5.0, 1, 2]}
    )
    c = pl.DataFrame({"query_id": ["q", "r"], "doc_id": ["d5", "d2"], "score": [0.5, 0.1]})
    once = Aligned([a, b, c])
    for weights in ([1, 1, 1], [1, 0, 1], [1, 0.5, 0], [0, 0, 2]):
        want = fuse([a, b, c], weights, method=method, **params)
        got = fuse(once, weights, method=method, **params)
        assert got.equals(want), (weights, got, want)
    # a doc only a run of weight 0 retrieved is left out (d4, d5 here)
    assert set(fuse(once, [1, 0, 0], method=method, **params)["doc_id"]) == {"d1", "d2", "d3"}
