"""The one grouping rule and its folds, on hand-worked ids of each data set's kind."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from convlab.evaluation import folds


def test_locomo_ids_are_grouped_by_the_conversation_they_name() -> None:
    # the text before the last ':' ("a:b" for a conversation id holding a ':')
    assert folds.groups(["conv-26:q0", "conv-26:q7", "conv-30:q0", "a:b:q1"]) == [
        "conv-26",
        "conv-26",
        "conv-30",
        "a:b",
    ]


def test_a_named_conversation_comes_before_the_id_and_the_docs() -> None:
    queries = pl.DataFrame(
        {
            "query_id": ["x:q0", "q1"],
            "conversation_id": ["c9", None],
            "relevant": [["c1:m1"], ["c2:m4"]],
        }
    )
    assert folds.groups(["x:q0", "q1"], queries) == ["c9", "c2"]


def test_real_session_ids_take_their_relevant_docs_conversation() -> None:
    # rs-q1, rs-q2 in c1; rs-q3's docs are in c1 and c2, which joins c2 (and rs-q4) to c1's
    # group; rs-q5's only judged doc is not relevant and rs-q6 has no qrels: their own groups;
    # rs-q7's conversation holds a ':' (a sub-agent's), rs-q8's doc id has none
    qrels = pl.DataFrame(
        {
            "query_id": ["rs-q1", "rs-q2", "rs-q3", "rs-q3", "rs-q4", "rs-q5", "rs-q7", "rs-q8"],
            "doc_id": ["c1:m1", "c1:m9", "c2:m2", "c1:m2", "c2:m1", "c3:m1", "s:agent-1:m3", "d"],
            "relevance": [1, 2, 1, 1, 1, 0, 1, 1],
        }
    )
    ids = ["rs-q1", "rs-q2", "rs-q3", "rs-q4", "rs-q5", "rs-q6", "rs-q7", "rs-q8"]
    assert folds.groups(ids, qrels) == [
        "c1",
        "c1",
        "c1",
        "c1",
        "rs-q5",
        "rs-q6",
        "s:agent-1",
        "rs-q8",
    ]
    # the same from a queries frame's relevant lists (conversation_id null)
    queries = pl.DataFrame(
        {
            "query_id": ids[:4],
            "conversation_id": [None] * 4,
            "relevant": [["c1:m1"], ["c1:m9"], ["c2:m2", "c1:m2"], ["c2:m1"]],
        },
        schema_overrides={"conversation_id": pl.String},
    )
    assert folds.groups(ids[:4], queries) == ["c1"] * 4


def test_joined_conversations_are_named_by_the_first_in_sorted_order() -> None:
    # q1 joins b and c, q2 joins a and c: one group, named a
    qrels = pl.DataFrame(
        {
            "query_id": ["q0", "q1", "q1", "q2", "q2"],
            "doc_id": ["b:m1", "c:m1", "b:m2", "c:m2", "a:m1"],
            "relevance": [1] * 5,
        }
    )
    assert folds.groups(["q0", "q1", "q2"], qrels) == ["a", "a", "a"]


def test_longmemeval_questions_with_their_own_haystack_are_their_own_groups() -> None:
    # their relevant turns share a session, which would group them without haystacks
    queries = pl.DataFrame(
        {
            "query_id": ["001be529", "0a995998", "0a995998_abs"],
            "conversation_id": [None, None, None],
            "relevant": [["s1:t0"], ["s1:t3"], []],
        },
        schema_overrides={"conversation_id": pl.String},
    )
    ids = queries["query_id"].to_list()
    assert folds.groups(ids, queries) == ["s1", "s1", "0a995998_abs"]
    assert folds.groups(ids, queries, haystacks=True) == ids
    assert folds.rule(haystacks=True) == "question"
    assert folds.rule() == "conversation"


def test_folds_are_deterministic_and_never_split_a_group() -> None:
    # sizes a 4, b 3, c 2, d 1: GroupKFold deals the largest first, each to the lightest fold
    group = ["a", "b", "a", "c", "d", "b", "a", "c", "a", "b"]
    ids = [f"q{i}" for i in range(10)]
    frame = folds.fold_frame(ids, group, 3)
    again = folds.fold_frame(ids, group, 3)
    assert frame.equals(again)
    fold_of = {g: set(f) for g, f in frame.group_by("group").agg("fold").iter_rows()}
    assert all(len(f) == 1 for f in fold_of.values())
    # a (4) -> fold 0; b (3) -> fold 1; c (2) -> fold 2; d (1) -> fold 2 (then 4, 3, 2)
    assert {g: f.pop() for g, f in fold_of.items()} == {"a": 0, "b": 1, "c": 2, "d": 2}
    assert folds.record(frame) == {"rule": "conversation", "groups": 4, "folds": 3, "queries": 10}


def test_folds_are_capped_by_the_groups_and_need_two() -> None:
    assert len(folds.splits(["a", "b", "a"], 10)) == 2
    with pytest.raises(ValueError, match="1 query groups cannot make 2 folds"):
        folds.splits(["a", "a"])
    # with one group no query has a fold
    assert folds.fold_frame(["q0", "q1"], ["a", "a"])["fold"].to_list() == [None, None]


def test_query_folds_put_unjudged_queries_in_no_fold() -> None:
    queries = pl.DataFrame(
        {
            "query_id": ["c1:q0", "c2:q0", "c3:q0", "c3:q1"],
            "conversation_id": ["c1", "c2", "c3", "c3"],
            "relevant": [["c1:m0"], ["c2:m0"], ["c3:m0"], []],
        }
    )
    frame = folds.query_folds(queries, folds=2)
    assert frame["query_id"].to_list() == queries["query_id"].to_list()
    assert frame["group"].to_list() == ["c1", "c2", "c3", "c3"]
    # three groups of one judged query each into two folds: c1 -> 0, c2 -> 1, c3 -> 0
    assert frame["fold"].to_list() == [0, 1, 0, None]


def test_run_labels_read_the_qrels_and_the_haystacks_flag(tmp_path: Path) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 c1:m1 1\n", encoding="utf-8")
    (tmp_path / "config.json").write_text(json.dumps({"data": {"haystacks": True}}))
    qrels, haystacks = folds.run_labels(tmp_path)
    assert haystacks is True
    assert qrels is not None
    assert qrels["doc_id"].to_list() == ["c1:m1"]
    assert folds.run_labels(tmp_path / "none") == (None, False)


def test_stratified_splits_keep_groups_whole_and_give_every_fold_the_rare_class() -> None:
    # 6 groups: a, b, c of 4 answerable queries each, x, y, z of 1 no-answer query each. Plain
    # GroupKFold deals groups by size, so with 3 folds the three singletons may share one
    # fold; stratified, each of the 3 folds holds one no-answer query and one 4-query group.
    group = ["a"] * 4 + ["b"] * 4 + ["c"] * 4 + ["x", "y", "z"]
    labels = [False] * 12 + [True] * 3
    got = folds.splits(group, 3, labels=labels)
    assert len(got) == 3
    for train, test in got:
        assert sorted(labels[i] for i in test) == [False] * 4 + [True]
        assert any(labels[i] for i in train)
        assert not {group[i] for i in train} & {group[i] for i in test}
