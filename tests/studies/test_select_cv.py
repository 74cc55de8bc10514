"""A system chosen by grouped CV: each fold's choice reads its training queries only.

Three conversations c1, c2, c3 (two queries each) and three candidates; recall@5 per query:

    candidate   c1      c2      c3
    a           1, 1    0, 0    0, 0
    b           0, 0    1, 1    0.5, 0.5
    c           0, 0    0.5, 0.5 1, 1

Leave one conversation out (3 folds):
- test c1: train c2 + c3 means a 0, b 0.75, c 0.75: b (first of equal maxima); b on c1 = 0, 0.
- test c2: train c1 + c3 means a 0.5, b 0.25, c 0.5: a (first of equal); a on c2 = 0, 0.
- test c3: train c1 + c2 means a 0.5, b 0.5, c 0.25: a; a on c3 = 0, 0.
Held-out mean 0, though in-sample each candidate has a conversation where it is perfect.
"""

from __future__ import annotations

import polars as pl
import pytest

from convlab.studies.select_cv import select_by_cv

TABLE = {
    "a": [1, 1, 0, 0, 0, 0],
    "b": [0, 0, 1, 1, 0.5, 0.5],
    "c": [0, 0, 0.5, 0.5, 1, 1],
}
IDS = ["c1:q0", "c1:q1", "c2:q0", "c2:q1", "c3:q0", "c3:q1"]


def _pq(table: dict[str, list[float]]) -> pl.DataFrame:
    rows = [
        {"system": s, "query_id": q, "category": "x", "metric": m, "value": float(v) / d}
        for s, values in table.items()
        for q, v in zip(IDS, values, strict=True)
        for m, d in (("recall@5", 1), ("mrr", 2))  # mrr: half, to see every metric carried
    ]
    return pl.DataFrame(rows)


def test_each_fold_chooses_on_its_training_conversations() -> None:
    held, choices = select_by_cv(_pq(TABLE), ["a", "b", "c"], name="cv", folds=3)
    by_group = {r["test_groups"]: r["system"] for r in choices.iter_rows(named=True)}
    assert by_group == {"c1": "b", "c2": "a", "c3": "a"}
    r5 = held.filter(pl.col("metric") == "recall@5")
    assert r5["query_id"].to_list() == IDS
    assert r5["value"].to_list() == [0.0] * 6
    assert set(held["system"]) == {"cv"}
    assert held.filter(pl.col("metric") == "mrr").height == 6


def test_a_test_fold_cannot_move_its_own_choice() -> None:
    # make c on c1 perfect: only the fold that tests c1 could profit, and must not
    changed = {**TABLE, "c": [5, 5, 0.5, 0.5, 1, 1]}
    _, before = select_by_cv(_pq(TABLE), ["a", "b", "c"], name="cv", folds=3)
    _, after = select_by_cv(_pq(changed), ["a", "b", "c"], name="cv", folds=3)
    row = {r["test_groups"]: r["system"] for r in after.iter_rows(named=True)}
    assert row["c1"] == "b"  # unchanged: c1's values are not read by its own fold
    assert before.filter(pl.col("test_groups") == "c1")["system"].item() == "b"


def test_bad_requests_are_refused() -> None:
    pq = _pq(TABLE)
    with pytest.raises(ValueError, match="two or more candidates"):
        select_by_cv(pq, ["a", "a"], name="cv")
    with pytest.raises(ValueError, match="'b' is already a system"):
        select_by_cv(pq, ["a", "c"], name="b")
    short = pq.filter(~((pl.col("system") == "c") & (pl.col("query_id") == "c3:q1")))
    with pytest.raises(ValueError, match="candidate 'c' has 5 values for 6 queries"):
        select_by_cv(short, ["a", "c"], name="cv")
    one = pq.filter(pl.col("query_id").str.starts_with("c1"))
    with pytest.raises(ValueError, match="1 query groups cannot make 2 folds"):
        select_by_cv(one, ["a", "b"], name="cv")
