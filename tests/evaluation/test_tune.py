"""Grouped cross-validation: choices worked by hand, and no held-out label moves a choice."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from convlab.evaluation.tune import (
    cross_validate,
    grid,
    random_space,
    tune,
)
from convlab.systems.system import Tuning


def answers(docs: dict[str, str]) -> pl.DataFrame:
    """A run that returns one doc per query."""
    return pl.DataFrame(
        {"query_id": list(docs), "doc_id": list(docs.values()), "score": [1.0] * len(docs)}
    )


def qrels_of(relevant: dict[str, str]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "query_id": list(relevant),
            "doc_id": list(relevant.values()),
            "relevance": [1] * len(relevant),
        }
    )


def by_test_group(choices: pl.DataFrame) -> dict[str, dict]:
    return {r["test_groups"]: r for r in choices.iter_rows(named=True)}


# setting p is right on a and b, r on b and c (recall@1 per query):
#        a  b  c
#   p    1  1  0
#   r    0  1  1
# hold out a: train {b, c}: p .5, r 1  -> r; a under r = 0
# hold out b: train {a, c}: p .5, r .5 -> tie, the first setting: p; b under p = 1
# hold out c: train {a, b}: p 1,  r .5 -> p; c under p = 0
# CV mean (0 + 1 + 0) / 3 = 1/3, although both settings score 2/3 on all queries
QRELS = qrels_of({"a:q0": "a:d1", "b:q0": "b:d1", "c:q0": "c:d1"})
RUNS = {
    "p": answers({"a:q0": "a:d1", "b:q0": "b:d1", "c:q0": "c:d9"}),
    "r": answers({"a:q0": "a:d9", "b:q0": "b:d1", "c:q0": "c:d1"}),
}


def test_choices_differ_between_folds_as_worked_by_hand() -> None:
    space = [{"x": "p"}, {"x": "r"}]
    res = tune(lambda p: RUNS[p["x"]], space, QRELS, Tuning(metric="recall@1", folds=3))
    got = by_test_group(res.choices)
    assert {g: json.loads(r["params"])["x"] for g, r in got.items()} == {
        "a": "r",
        "b": "p",
        "c": "p",
    }
    assert {g: r["train_mean"] for g, r in got.items()} == {"a": 1.0, "b": 0.5, "c": 1.0}
    values = dict(res.per_query.select("query_id", "value").iter_rows())
    assert values == {"a:q0": 0.0, "b:q0": 1.0, "c:q0": 0.0}
    assert res.mean == pytest.approx(1 / 3)
    assert res.scores["mean"].to_list() == pytest.approx([2 / 3, 2 / 3])
    assert res.per_query["fold"].n_unique() == 3


def test_reported_metrics_follow_the_choice() -> None:
    res = tune(
        lambda p: RUNS[p["x"]],
        [{"x": "p"}, {"x": "r"}],
        QRELS,
        Tuning(metric="recall@1", folds=3),
        report=("ndcg@10",),
    )
    ndcg = res.per_query.filter(pl.col("metric") == "ndcg@10")
    # one relevant doc at rank 1 or absent: nDCG equals recall@1 here
    assert dict(ndcg.select("query_id", "value").iter_rows()) == {
        "a:q0": 0.0,
        "b:q0": 1.0,
        "c:q0": 0.0,
    }
    assert res.mean == pytest.approx(1 / 3)


# settings 0, 1, 2 answer every query with doc d0, d1, d2. Group g1 (6 queries) is alone in
# its fold (GroupKFold puts the largest group first); the other groups prefer d0 (5 of 9).
TRAIN_RELEVANT = {
    "g2:q0": "d0", "g2:q1": "d0", "g2:q2": "d1",
    "g3:q0": "d0", "g3:q1": "d1", "g3:q2": "d2",
    "g4:q0": "d0", "g4:q1": "d0", "g4:q2": "d2",
}  # fmt: skip
G1 = [f"g1:q{i}" for i in range(6)]


def system(params: dict) -> pl.DataFrame:
    ids = [*G1, *TRAIN_RELEVANT]
    return answers({q: f"{q.split(':')[0]}:d{params['x']}" for q in ids})


def qrels_with_g1(doc: str) -> pl.DataFrame:
    rel = {q: f"{q.split(':')[0]}:{d}" for q, d in TRAIN_RELEVANT.items()}
    rel.update({q: f"g1:{doc}" for q in G1})
    return qrels_of({q: rel[q] for q in [*G1, *TRAIN_RELEVANT]})


def test_no_held_out_query_influences_its_fold_choice() -> None:
    space = grid({"x": [0, 1, 2]})
    config = Tuning(metric="recall@1", folds=4)
    results = {doc: tune(system, space, qrels_with_g1(doc), config) for doc in ("d0", "d1", "d2")}
    for doc, res in results.items():
        g1 = by_test_group(res.choices)["g1"]
        assert json.loads(g1["params"]) == {"x": 0}, doc  # 5 of 9 training queries want d0
        assert g1["train_mean"] == pytest.approx(5 / 9)
        # the held-out values do follow g1's labels
        assert g1["test_mean"] == (1.0 if doc == "d0" else 0.0)
    # teeth: on all queries, with g1 wanting d2, setting 2 is best (8 of 15 against 5): a
    # search that saw the held-out labels would have chosen it
    overall = results["d2"].scores.sort("mean", descending=True).row(0, named=True)
    assert json.loads(overall["params"]) == {"x": 2}
    # folds that train on g1 do follow its labels, as they should
    assert by_test_group(results["d2"].choices)["g2"]["params"] == '{"x": 2}'
    assert by_test_group(results["d0"].choices)["g2"]["params"] == '{"x": 0}'


def test_space_helpers() -> None:
    assert grid({"a": [1, 2], "b": [3, 4]}) == [
        {"a": 1, "b": 3},
        {"a": 1, "b": 4},
        {"a": 2, "b": 3},
        {"a": 2, "b": 4},
    ]
    sample = random_space({"a": list(range(10)), "b": [0, 1]}, 5, seed=3)
    assert len(sample) == 5
    assert len({json.dumps(s) for s in sample}) == 5
    assert sample == random_space({"a": list(range(10)), "b": [0, 1]}, 5, seed=3)
    assert random_space({"a": [1]}, 5) == [{"a": 1}]


def test_bad_configs() -> None:
    with pytest.raises(ValueError, match="folds is 1"):
        Tuning(folds=1)
    with pytest.raises(ValueError, match="unknown metric 'f1'"):
        Tuning(metric="f1")
    with pytest.raises(ValueError, match="3 groups cannot make 4 folds"):
        tune(lambda p: RUNS["p"], [{}], QRELS, Tuning(metric="recall@1", folds=4))
    with pytest.raises(ValueError, match="search space is empty"):
        tune(lambda p: RUNS["p"], [], QRELS)
    with pytest.raises(ValueError, match="2 groups for 3 scored queries"):
        tune(lambda p: RUNS["p"], [{}], QRELS, Tuning(folds=2), groups=["a", "b"])


def test_cross_validate_on_stacked_values_nests_a_choice() -> None:
    # two "systems" with one setting each: the worked example's rows p and r, stacked
    space = [{"system": "P"}, {"system": "R"}]
    values = {"recall@1": np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])}
    res = cross_validate(
        space,
        values,
        ["a:q0", "b:q0", "c:q0"],
        ["a", "b", "c"],
        Tuning(metric="recall@1", folds=3),
    )
    got = {g: json.loads(r["params"])["system"] for g, r in by_test_group(res.choices).items()}
    assert got == {"a": "R", "b": "P", "c": "P"}
    assert res.mean == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match=r"recall@1 values are \(2, 3\); expected \(3, 3\)"):
        cross_validate(
            [*space, {}],
            values,
            ["a:q0", "b:q0", "c:q0"],
            ["a", "b", "c"],
            Tuning(metric="recall@1", folds=3),
        )
    with pytest.raises(ValueError, match="no values of the tuned metric recall@5"):
        cross_validate(space, values, ["a:q0", "b:q0", "c:q0"], ["a", "b", "c"], Tuning(folds=3))


def test_one_tuning_config_for_systems_and_studies() -> None:
    # tune() takes the systems' Tuning; without one, Tuning's defaults: 10 folds (one per
    # group here, leave-one-conversation-out on LoCoMo), on recall@5
    ids = [f"c{i}:q0" for i in range(10)]
    run = pl.DataFrame({"query_id": ids, "doc_id": [f"c{i}:d0" for i in range(10)], "rank": 1})
    qrels = pl.DataFrame({"query_id": ids, "doc_id": [f"c{i}:d0" for i in range(10)]}).with_columns(
        relevance=pl.lit(1)
    )
    res = tune(lambda p: run, [{}], qrels)
    assert res.metric == "recall@5"
    assert res.choices.height == Tuning().folds == 10
