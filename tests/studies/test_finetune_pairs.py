"""Training triples of the fine-tuned MiniLM: the right units, and nothing of the test fold."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from convlab.embed.finetune import Triple
from convlab.evaluation.tune import cross_validate
from convlab.studies.finetune_pairs import (
    Fold,
    TrainingSet,
    check_no_leak,
    conversation_folds,
    training_triples,
)
from convlab.systems.system import Tuning

CONVS = ["a", "b", "c", "d"]


def _units() -> pl.DataFrame:
    """Three messages per conversation: ``c:m0`` .. ``c:m2``, text ``c says i``."""
    docs = [f"{c}:m{i}" for c in CONVS for i in range(3)]
    return pl.DataFrame(
        {
            "conversation_id": [d.split(":")[0] for d in docs],
            "doc_ids": [[d] for d in docs],
            "text": [f"{d.split(':')[0]} says {d[-1]}" for d in docs],
        }
    )


def _queries() -> pl.DataFrame:
    """Two queries per conversation: q0 needs m0, q1 needs m1 and m2."""
    rows = []
    for c in CONVS:
        rows.append((f"{c}:q0", f"{c} question zero", c, [f"{c}:m0"]))
        rows.append((f"{c}:q1", f"{c} question one", c, [f"{c}:m1", f"{c}:m2"]))
    return pl.DataFrame(
        rows, schema=["query_id", "text", "conversation_id", "relevant"], orient="row"
    )


def _hits() -> pl.DataFrame:
    """BM25 ranks m0, m1, m2 in that order for every query of a conversation."""
    rows = []
    for c in CONVS:
        for q in ("q0", "q1"):
            rows += [(f"{c}:{q}", f"{c}:m{i}", i + 1) for i in range(3)]
    return pl.DataFrame(rows, schema=["query_id", "doc_id", "rank"], orient="row")


def test_triples_pair_each_evidence_unit_with_the_best_bm25_non_evidence() -> None:
    got = training_triples(_queries(), _units(), _hits(), ["b"])
    # q0: evidence m0, best non-evidence m1; q1: evidence m1 and m2, best non-evidence m0
    assert got.triples == [
        Triple("b question zero", "b says 0", "b says 1"),
        Triple("b question one", "b says 1", "b says 0"),
        Triple("b question one", "b says 2", "b says 0"),
    ]
    assert got.query_ids == ["b:q0", "b:q1", "b:q1"]
    assert got.negatives == ["b:m1", "b:m0", "b:m0"]


def test_folds_split_conversations_as_the_grouped_cv() -> None:
    ids = _queries()["query_id"].to_list()
    folds = conversation_folds(ids, 2)
    assert [f.index for f in folds] == [0, 1]
    for f in folds:
        assert not set(f.train) & set(f.test)
        assert sorted(f.train + f.test) == CONVS
    # tune.cross_validate's folds hold the same test conversations, fold by fold
    values = {"recall@5": np.zeros((1, len(ids)))}
    cv = cross_validate([{}], values, ids, [q.split(":")[0] for q in ids], Tuning(folds=2))
    assert cv.choices["test_groups"].to_list() == [",".join(f.test) for f in folds]
    with pytest.raises(ValueError, match="cannot make 5 folds"):
        conversation_folds(ids, 5)


def test_no_fold_trains_on_its_own_test_conversations() -> None:
    """The fold recipe, run end to end: it fails if the split leaks (a test query trained on)."""
    queries, units, hits = _queries(), _units(), _hits()
    for fold in conversation_folds(queries["query_id"].to_list(), 4):
        got = training_triples(queries, units, hits, fold.train)
        check_no_leak(got, fold, queries, units)  # raises on any leak
        test_ids = set(queries.filter(pl.col("conversation_id").is_in(fold.test))["query_id"])
        assert got.triples
        assert not set(got.query_ids) & test_ids
        assert not set(got.conversations) & set(fold.test)
        assert {q.split(":")[0] for q in got.query_ids} == set(fold.train)


def test_a_leaking_training_set_is_refused() -> None:
    queries, units, hits = _queries(), _units(), _hits()
    fold = Fold(0, 2, ("a", "b"), ("c", "d"))
    leaked = training_triples(queries, units, hits, ["a", "c"])  # the split broken
    with pytest.raises(ValueError, match="c:q0 is a test query"):
        check_no_leak(leaked, fold, queries, units)
    # a training query whose positive is a test conversation's unit text is refused too
    clean = training_triples(queries, units, hits, ["a"])
    forged = TrainingSet(
        [Triple("a question zero", "d says 0", "a says 1")],
        ["a:q0"],
        ["a"],
        ["a:m0"],
        ["a:m1"],
    )
    check_no_leak(clean, fold, queries, units)
    with pytest.raises(ValueError, match="test unit's text"):
        check_no_leak(forged, fold, queries, units)
