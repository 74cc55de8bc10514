"""The metric table: every row parsed, listed in the error and measured as ir_measures does."""

from __future__ import annotations

import ir_measures
import numpy as np
import polars as pl
import pytest

from convlab import schema
from convlab.evaluation.metrics import per_query
from convlab.metric_names import METRICS, MetricFamily, parse_metric


def _data() -> tuple[pl.DataFrame, pl.DataFrame, list, list]:
    rng = np.random.default_rng(5)
    docs = [f"d{i}" for i in range(30)]
    qs, hits = [], []
    for q in range(25):
        rel = list(rng.choice(docs, size=rng.integers(1, 4), replace=False))
        qs.append({"query_id": f"q{q}", "text": "t", "relevant": rel})
        ranking = list(rng.permutation(docs)[:15])
        hits += [{"query_id": f"q{q}", "doc_id": d, "rank": r + 1} for r, d in enumerate(ranking)]
    qrels = [ir_measures.Qrel(q["query_id"], d, 1) for q in qs for d in q["relevant"]]
    run = [ir_measures.ScoredDoc(h["query_id"], h["doc_id"], 100 - h["rank"]) for h in hits]
    return schema.frame(qs, schema.QUERIES), pl.DataFrame(hits), qrels, run


def _written(row: MetricFamily) -> str:
    return f"{row.name}@3" if row.cutoff else row.name


@pytest.mark.parametrize("row", METRICS, ids=lambda r: r.name)
def test_each_row_is_parsed_listed_and_measured(row: MetricFamily) -> None:
    name = _written(row)
    parsed = parse_metric(name.upper())
    assert (parsed.family, parsed.k, parsed.name) == (row.name, 3 if row.cutoff else None, name)
    assert parse_metric(f"session:{name}").level == "session"
    other = f"{row.name}@3" if not row.cutoff else row.name  # the other form is refused
    with pytest.raises(ValueError, match=f"valid: .*{row.form}") as e:
        parse_metric(other)
    assert all(r.form in str(e.value) for r in METRICS)
    queries, hits, qrels, run = _data()
    ours = dict(per_query(hits, queries, [name]).select("query_id", "value").iter_rows())
    measure = getattr(ir_measures, row.measure)  # the row names its ir_measures measure
    measure = measure @ 3 if row.cutoff else measure
    ref = {r.query_id: float(r.value) for r in ir_measures.iter_calc([measure], qrels, run)}
    expected = {q: (float(v >= 1.0) if row.all_of else v) for q, v in ref.items()}
    assert ours == pytest.approx(expected)


def test_the_error_lists_the_table_in_order() -> None:
    with pytest.raises(ValueError, match="unknown metric") as e:
        parse_metric("precision@5")
    forms = ", ".join(r.form for r in METRICS)
    assert str(e.value) == (
        f"unknown metric 'precision@5'; valid: {forms}, each optionally prefixed 'session:'"
    )
    # worked out by hand from the seven rows
    assert forms == "recall@k, success@k, recall_all@k, ndcg@k, judged@k, mrr, bpref"
