"""Metrics against hand computations and ir_measures itself; significance; query files."""

from __future__ import annotations

import math
from pathlib import Path

import ir_measures
import numpy as np
import polars as pl
import pytest

from convlab import schema
from convlab.errors import LoadError
from convlab.evaluation.metrics import per_query
from convlab.evaluation.queries import (
    read_qrels,
    read_queries,
    read_run,
    write_qrels,
    write_queries,
    write_run,
)
from convlab.evaluation.significance import (
    bootstrap_ci,
    compare,
    holm,
    paired_randomization,
    wilcoxon,
)
from convlab.metric_names import parse_metric

QUERIES = schema.frame(
    [
        {"query_id": "q1", "text": "a", "relevant": ["a", "b"], "category": "x"},
        {"query_id": "q2", "text": "b", "relevant": ["z"], "category": "y"},
        {"query_id": "q3", "text": "c", "relevant": [], "category": "y"},
    ],
    schema.QUERIES,
)
HITS = pl.DataFrame(
    {
        "query_id": ["q1"] * 4 + ["q2"] * 2,
        "doc_id": ["c", "a", "d", "b", "x", "y"],
        "rank": [1, 2, 3, 4, 1, 2],
        "score": [4.0, 3.0, 2.0, 1.0, 2.0, 1.0],
    }
)


def test_metrics_by_hand() -> None:
    pq = per_query(
        HITS, QUERIES, ["recall@2", "success@2", "recall_all@4", "recall_all@2", "mrr", "ndcg@10"]
    )
    v = {(q, m): x for q, m, x in pq.iter_rows()}
    # q1: relevant {a, b}, ranking c a d b
    assert v[("q1", "recall@2")] == 0.5
    assert v[("q1", "success@2")] == 1.0
    assert v[("q1", "recall_all@4")] == 1.0
    assert v[("q1", "recall_all@2")] == 0.0
    assert v[("q1", "mrr")] == 0.5
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    assert v[("q1", "ndcg@10")] == pytest.approx(dcg / (1 + 1 / math.log2(3)))
    # q2: nothing relevant retrieved
    assert v[("q2", "recall@2")] == 0.0
    assert v[("q2", "mrr")] == 0.0
    # q3 has no relevant docs: left out
    assert "q3" not in set(pq["query_id"])


def test_agrees_with_ir_measures() -> None:
    rng = np.random.default_rng(0)
    docs = [f"d{i}" for i in range(30)]
    qs, hits = [], []
    for q in range(20):
        rel = list(rng.choice(docs, size=rng.integers(1, 4), replace=False))
        qs.append({"query_id": f"q{q}", "text": "t", "relevant": rel})
        ranking = list(rng.permutation(docs)[:15])
        hits += [{"query_id": f"q{q}", "doc_id": d, "rank": r + 1} for r, d in enumerate(ranking)]
    queries, run = schema.frame(qs, schema.QUERIES), pl.DataFrame(hits)
    ours = per_query(run, queries, ["recall@5", "ndcg@10", "mrr", "success@3"])
    qrels = [ir_measures.Qrel(q["query_id"], d, 1) for q in qs for d in q["relevant"]]
    scored = [ir_measures.ScoredDoc(h["query_id"], h["doc_id"], 100 - h["rank"]) for h in hits]
    ref = ir_measures.calc_aggregate(
        [ir_measures.R @ 5, ir_measures.nDCG @ 10, ir_measures.RR, ir_measures.Success @ 3],
        qrels,
        scored,
    )
    means = dict(ours.group_by("metric").agg(pl.col("value").mean()).iter_rows())
    assert means["recall@5"] == pytest.approx(ref[ir_measures.R @ 5])
    assert means["ndcg@10"] == pytest.approx(ref[ir_measures.nDCG @ 10])
    assert means["mrr"] == pytest.approx(ref[ir_measures.RR])
    assert means["success@3"] == pytest.approx(ref[ir_measures.Success @ 3])


def test_metric_names() -> None:
    assert parse_metric("NDCG@10").name == "ndcg@10"
    with pytest.raises(ValueError, match="valid: recall@k"):
        parse_metric("precision@5")


def test_holm_by_hand() -> None:
    # sorted: 0.01*3 = 0.03; 0.03*2 = 0.06; 0.04*1 = 0.04 -> max(0.06, 0.04) = 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_paired_tests() -> None:
    rng = np.random.default_rng(1)
    a = rng.random(200)
    assert paired_randomization(a, a) == 1.0
    assert wilcoxon(a, a) == 1.0
    better = np.clip(a + 0.2, 0, 1)
    assert paired_randomization(better, a, permutations=2000) < 0.01
    assert wilcoxon(better, a) < 0.01
    lo, hi = bootstrap_ci(a)
    assert lo < a.mean() < hi


def test_randomization_p_values_are_those_of_fresh_draws() -> None:
    # the signs are drawn once per (seed, permutations, n) and shared; each p-value must be the
    # one the test gave when every call drew its own signs: count the |means| >= observed
    def fresh(a: np.ndarray, b: np.ndarray, permutations: int, seed: int) -> float:
        d = a - b
        signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(permutations, d.size))
        means = np.abs((signs * d).mean(axis=1))
        return float((np.sum(means >= abs(d.mean()) - 1e-12) + 1) / (permutations + 1))

    rng = np.random.default_rng(4)
    for n, permutations, seed in [(1, 50, 0), (7, 999, 3), (300, 2500, 0), (301, 2500, 0)]:
        for _ in range(3):
            a, b = rng.integers(0, 3, n) / 2.0, rng.integers(0, 3, n) / 2.0  # ties included
            got = paired_randomization(a, b, permutations=permutations, seed=seed)
            assert got == fresh(a, b, permutations, seed)
    # by hand: one query, d = 0.5; every sign gives |mean| 0.5 >= 0.5, so p = (P + 1)/(P + 1)
    assert paired_randomization(np.array([1.0]), np.array([0.5]), permutations=9) == 1.0


def test_bootstrap_interval_is_scipys_exactly() -> None:
    from scipy import stats

    rng = np.random.default_rng(2)
    for n, seed in [(2, 0), (17, 3), (400, 0), (401, 0)]:
        for x in (rng.integers(0, 5, n) / 4.0, rng.random(n)):
            want = stats.bootstrap(
                (x,),
                np.mean,
                n_resamples=2000,
                method="percentile",
                rng=np.random.default_rng(seed),
            ).confidence_interval
            assert bootstrap_ci(x, seed=seed) == (float(want.low), float(want.high))
    assert bootstrap_ci(np.array([0.5, 0.5, 0.5])) == (0.5, 0.5)  # no spread, no resampling


def test_compare_marks_only_real_differences() -> None:
    rng = np.random.default_rng(2)
    base = rng.integers(0, 2, 300).astype(float)
    rows = []
    for name, vals in [
        ("base", base),
        ("same", base.copy()),
        ("better", np.maximum(base, rng.integers(0, 2, 300))),
    ]:
        rows += [
            {"system": name, "query_id": f"q{i}", "metric": "recall@5", "value": v}
            for i, v in enumerate(vals)
        ]
    out = compare(pl.DataFrame(rows), "base")
    sig = dict(out.select("system", "significant").iter_rows())
    assert sig == {"base": False, "same": False, "better": True}


def test_query_files_roundtrip(tmp_path: Path) -> None:
    write_queries(QUERIES, tmp_path / "q.jsonl")
    back = read_queries(tmp_path / "q.jsonl")
    assert back.equals(QUERIES)
    write_qrels(QUERIES, tmp_path / "qrels.txt")
    assert read_qrels(tmp_path / "qrels.txt").rows() == [
        ("q1", "a", 1),
        ("q1", "b", 1),
        ("q2", "z", 1),
    ]
    write_run(HITS, tmp_path / "run.trec", "sys")
    run = read_run(tmp_path / "run.trec")
    assert (
        run.select("query_id", "doc_id", "rank").rows()
        == HITS.select("query_id", "doc_id", "rank").rows()
    )
    # ir_measures reads what convlab writes
    res = ir_measures.calc_aggregate(
        [ir_measures.R @ 2],
        ir_measures.read_trec_qrels(str(tmp_path / "qrels.txt")),
        ir_measures.read_trec_run(str(tmp_path / "run.trec")),
    )
    assert res[ir_measures.R @ 2] == pytest.approx((0.5 + 0.0) / 2)


def test_bad_query_file_names_the_line(tmp_path: Path) -> None:
    f = tmp_path / "q.jsonl"
    f.write_text('{"query_id": "a", "text": "x", "relevant": []}\n{"query_id": 3, "text": "y"}\n')
    with pytest.raises(LoadError, match=r"q\.jsonl:2: 'query_id' has the wrong type"):
        read_queries(f)
    with pytest.warns(UserWarning, match="skipped 1 bad query"):
        assert read_queries(f, strict=False).height == 1


def test_aggregate_means_do_not_depend_on_row_order() -> None:
    import numpy as np

    from convlab.evaluation.metrics import aggregate

    rng = np.random.default_rng(0)
    n = 20_000
    frame = pl.DataFrame(
        {
            "system": rng.choice(["a", "b", "c"], n).tolist(),
            "query_id": [f"q{i}" for i in range(n)],
            "metric": rng.choice(["recall@5", "ndcg@10"], n).tolist(),
            "value": rng.random(n) * 1e3,
        }
    )
    want = aggregate(frame, by=["system"])
    for seed in range(5):
        shuffled = frame.sample(fraction=1.0, shuffle=True, seed=seed)
        got = aggregate(shuffled, by=["system"])
        assert got["mean"].to_list() == want["mean"].to_list()  # bit for bit
