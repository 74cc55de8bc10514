"""LongMemEval's official protocol: keys, gold, measures and averages, worked out by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

from convlab.errors import LoadError
from convlab.evaluation.lme_official import (
    averages,
    complete_rankings,
    measures_at,
    official_measures,
    read_official,
    turn_to_session_at,
    with_doc_ids,
)
from convlab.loaders.longmemeval import read_longmemeval

FIXTURE = Path(__file__).parent.parent / "fixtures" / "longmemeval" / "longmemeval_fixture.json"


def _user(text: str, has: bool | None = None) -> dict[str, object]:
    turn: dict[str, object] = {"role": "user", "content": text}
    if has is not None:
        turn["has_answer"] = has
    return turn


def _bot(text: str) -> dict[str, object]:
    return {"role": "assistant", "content": text, "has_answer": False}


def _question(qid: str, sessions: dict[str, list[dict[str, object]]]) -> dict[str, object]:
    return {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": "where did I travel",
        "answer": "x",
        "question_date": "2023/05/10 (Wed) 12:00",
        "haystack_session_ids": list(sessions),
        "haystack_dates": ["2023/05/01 (Mon) 09:00"] * len(sessions),
        "haystack_sessions": list(sessions.values()),
        "answer_session_ids": [s for s in sessions if "answer" in s],
    }


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """q1: a plain session whose user message has has_answer (not gold: no 'answer' in its
    id), an answer session with a gold and a non-gold user message, an answer session with no
    has_answer (renamed noans); q2_abs: abstention; q3: no has_answer anywhere."""
    items = [
        _question(
            "q1",
            {
                "s_plain": [_user("alpha beta", True), _bot("ok")],
                "answer_a": [_user("kyoto trip", True), _bot("nice"), _user("norway next", False)],
                "answer_b": [_bot("hello"), _user("bread recipe", False)],
            },
        ),
        _question("q2_abs", {"answer_a": [_user("kyoto trip", True), _bot("nice")]}),
        _question("q3", {"s_plain": [_user("alpha beta"), _bot("ok")]}),
    ]
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(items))
    return path


def test_turn_keys_are_user_messages_numbered_with_assistants_and_renamed_noans(
    tiny: Path,
) -> None:
    labels = read_official(tiny)
    q1 = labels.turns.filter(pl.col("query_id") == "q1")
    assert q1["key"].to_list() == ["s_plain_1", "answer_a_1", "noans_a_3", "noans_b_2"]
    assert q1["gold"].to_list() == [False, True, False, False]
    assert q1["position"].to_list() == [0, 1, 2, 3]
    assert q1["message"].to_list() == [1, 1, 3, 2]
    assert q1["text"].to_list() == ["alpha beta", "kyoto trip", "norway next", "bread recipe"]
    q3 = labels.turns.filter(pl.col("query_id") == "q3")
    assert q3["position"].to_list() == [0]  # positions count inside each question


def test_session_keys_join_user_messages_and_need_a_has_answer_user_message(tiny: Path) -> None:
    s = read_official(tiny).sessions.filter(pl.col("query_id") == "q1")
    assert s["key"].to_list() == ["s_plain", "answer_a", "noans_b"]
    assert s["gold"].to_list() == [False, True, False]
    assert s["text"].to_list() == ["alpha beta", "kyoto trip norway next", "bread recipe"]


def test_questions_say_abstention_and_whether_any_user_message_has_an_answer(tiny: Path) -> None:
    q = read_official(tiny).questions
    assert q["abstention"].to_list() == [False, True, False]
    # q1 has a target (even the plain session's has_answer counts, as the official filter)
    assert q["has_target"].to_list() == [True, True, False]
    assert read_official(tiny).strict()["query_id"].to_list() == ["q1"]


def test_a_file_that_is_not_questions_is_refused_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"question_id": "q"}]))
    with pytest.raises(LoadError, match=r"bad\.json:1: question 0: 'haystack_session_ids'"):
        read_official(bad)


def test_measures_use_the_official_dcg_whose_second_rank_is_not_discounted() -> None:
    ranked, gold = ["a", "g1", "b", "g2"], {"g1", "g2"}
    assert measures_at(ranked, gold, 1) == (0.0, 0.0, 0.0)
    # DCG@2 = 0 + 1/log2(2) = 1; ideal = 1 + 1/log2(2) = 2 (standard nDCG would give 0.387)
    assert measures_at(ranked, gold, 2) == (1.0, 0.0, 0.5)
    # DCG@4 = 1 + 1/log2(4) = 1.5; ideal@4 = 2
    assert measures_at(ranked, gold, 4) == (1.0, 1.0, 0.75)
    # DCG@3 = 1/log2(2) + 1/log2(3); ideal@3 = 1 + 1/log2(2) = 2
    assert measures_at(["a", "g1", "g2"], gold, 3)[2] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert measures_at(["a", "b", "g1"], {"g1"}, 3)[2] == pytest.approx(1 / math.log2(3))


def test_a_question_without_gold_has_recall_all_one_and_the_others_zero() -> None:
    for k in (1, 3, 50):
        assert measures_at(["a", "b"], set(), k) == (0.0, 1.0, 0.0)


def test_turn_to_session_widens_k_until_k_distinct_sessions() -> None:
    ranked, gold = ["s1_1", "s1_3", "answer_2_1", "s3_1"], {"answer_2_1"}
    assert turn_to_session_at(ranked, gold, 1) == (0.0, 0.0, 0.0)  # top 1: s1
    # k = 2: the top 2 are one session (s1 twice), widened to 3: s1, s1, answer_2
    any_, all_, ndcg = turn_to_session_at(ranked, gold, 2)
    assert (any_, all_) == (1.0, 1.0)
    assert ndcg == pytest.approx(1 / math.log2(3))  # third place; the ideal puts it first
    # k past the sessions: widened to the end of the list
    assert turn_to_session_at(ranked, gold, 5)[:2] == (1.0, 1.0)


def test_turn_to_session_splits_a_session_into_its_gold_and_noans_turns() -> None:
    # answer_x's non-gold turn is noans_x_3: after stripping, noans_x and answer_x differ
    ranked, gold = ["noans_x_3", "answer_x_1"], {"answer_x_1"}
    assert turn_to_session_at(ranked, gold, 1) == (0.0, 0.0, 0.0)
    assert turn_to_session_at(ranked, gold, 2) == (1.0, 1.0, 1.0)


def test_every_turn_of_a_gold_session_adds_gain_at_session_level() -> None:
    # session answer_y has two gold turns: ideal relevances [1, 1, 0], both count
    ranked, gold = ["s1_1", "answer_y_1", "answer_y_2"], {"answer_y_1", "answer_y_2"}
    # k = 2: top 2 = s1, answer_y (2 distinct); DCG = 1/log2(2) = 1, ideal = 2
    assert turn_to_session_at(ranked, gold, 2) == (1.0, 1.0, 0.5)


def _keys() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "query_id": ["q"] * 4,
            "position": [0, 1, 2, 3],
            "session_id": ["s", "answer_a", "answer_a", "t"],
            "key": ["s_1", "answer_a_1", "noans_a_3", "t_1"],
            "gold": [False, True, False, False],
            "doc_id": ["s:m0", "answer_a:m0", "answer_a:m2", None],
        },
        schema_overrides={"position": pl.Int32},
    )


def test_a_ranking_is_completed_with_the_keys_not_returned_in_haystack_order() -> None:
    hits = pl.DataFrame(
        {"query_id": ["q"] * 3, "rank": [1, 2, 3], "doc_id": ["answer_a:m2", "s:m0", "s:m0"]}
    )
    ranked = complete_rankings(hits, _keys())
    assert ranked["key"].to_list() == ["noans_a_3", "s_1", "answer_a_1", "t_1"]
    assert ranked["rank"].to_list() == [1, 2, 3, 4]


def test_a_hit_that_is_no_key_of_its_question_is_an_error() -> None:
    hits = pl.DataFrame({"query_id": ["q"], "rank": [1], "doc_id": ["answer_a:m1"]})
    with pytest.raises(ValueError, match="doc 'answer_a:m1'"):
        complete_rankings(hits, _keys())


def test_official_measures_per_question_and_level() -> None:
    hits = pl.DataFrame({"query_id": ["q"], "rank": [1], "doc_id": ["s:m0"]})
    out = official_measures(complete_rankings(hits, _keys()), ks=(1, 2))
    got = {(r["level"], r["metric"]): r["value"] for r in out.iter_rows(named=True)}
    assert got[("turn", "recall_any@1")] == 0.0
    assert got[("turn", "recall_all@2")] == 1.0  # s_1, answer_a_1
    # ranked s_1, answer_a_1: DCG@2 = 0 + 1/log2(2) = 1, the ideal (one gold key) 1
    assert got[("turn", "ndcg_any@2")] == 1.0
    assert got[("session", "recall_any@1")] == 0.0


def test_the_two_averages_keep_the_questions_the_official_code_keeps() -> None:
    per_q = pl.DataFrame(
        {
            "query_id": ["q1", "q2_abs", "q3"],
            "level": ["turn"] * 3,
            "metric": ["recall_all@5"] * 3,
            "value": [0.0, 0.5, 1.0],  # q3 has no gold: recall_all is 1
        }
    )
    questions = pl.DataFrame(
        {
            "query_id": ["q1", "q2_abs", "q3"],
            "abstention": [False, True, False],
            "has_target": [True, True, False],
        }
    )
    out = {
        r["average"]: (r["mean"], r["queries"])
        for r in averages(per_q, questions).iter_rows(named=True)
    }
    assert out == {"strict": (0.0, 1), "non_abstention": (0.5, 2)}


def test_each_turn_key_maps_to_the_message_it_is() -> None:
    corpus, _ = read_longmemeval(FIXTURE)
    turns = with_doc_ids(read_official(FIXTURE), corpus.messages).turns
    text = corpus.blocks.select(
        pl.format("{}:m{}", "conversation_id", "message_index").alias("doc_id"), "text"
    )
    joined = turns.join(text, on="doc_id", how="left", suffix="_doc")
    assert joined["doc_id"].null_count() == 0
    assert joined["text"].to_list() == joined["text_doc"].to_list()
    assert turns.filter(pl.col("query_id") == "q1")["doc_id"].to_list() == [
        "sharegpt_a:m0",
        "answer_1a:m0",
        "answer_1a:m2",
        "ultrachat_b:m0",
    ]


def test_systems_are_scored_per_question_averaged_and_tested_against_the_baseline() -> None:
    from convlab.evaluation.lme_official import OfficialLabels
    from convlab.evaluation.lme_scores import score_official

    keys = pl.concat([_keys(), _keys().with_columns(pl.lit("r").alias("query_id"))])
    questions = pl.DataFrame(
        {
            "query_id": ["q", "r"],
            "question": ["kyoto", "kyoto"],
            "category": ["a", "b"],
            "abstention": [False, False],
            "has_target": [True, True],
        }
    )
    session = pl.DataFrame(
        {
            "query_id": ["q"] * 3,
            "session_id": ["s", "answer_a", "t"],
            "position": [0, 1, 2],
            "key": ["s", "answer_a", "t"],
            "gold": [False, True, False],
        },
        schema_overrides={"position": pl.Int32},
    )
    sessions = pl.concat([session, session.with_columns(pl.lit("r").alias("query_id"))])
    labels = OfficialLabels(questions, keys, sessions)
    found = pl.DataFrame({"query_id": ["q", "r"], "rank": [1, 1], "doc_id": ["answer_a:m0"] * 2})
    missed = pl.DataFrame({"query_id": ["q", "r"], "rank": [1, 1], "doc_id": ["s:m0"] * 2})
    scores = score_official(
        {"base": missed, "good": found}, labels, baseline="base", reference=False
    )
    at1 = scores.summary.filter((pl.col("level") == "turn") & (pl.col("metric") == "recall_any@1"))
    means = {(r["system"], r["average"]): r["mean"] for r in at1.iter_rows(named=True)}
    assert means == {
        ("base", "strict"): 0.0,
        ("good", "strict"): 1.0,
        ("base", "non_abstention"): 0.0,
        ("good", "non_abstention"): 1.0,
    }
    # session keys: "good" ranks answer_a's session first, "base" ranks session s first
    keys_at1 = scores.summary.filter(
        (pl.col("level") == "session_keys") & (pl.col("metric") == "recall_any@1")
    )
    assert {(r["system"], r["average"]): r["mean"] for r in keys_at1.iter_rows(named=True)} == {
        ("base", "strict"): 0.0,
        ("good", "strict"): 1.0,
        ("base", "non_abstention"): 0.0,
        ("good", "non_abstention"): 1.0,
    }
    assert set(scores.per_question["level"]) == {"turn", "session", "session_keys"}
    assert set(scores.per_question["category"]) == {"a", "b"}
    sig = scores.significance.filter(
        (pl.col("level") == "turn") & (pl.col("metric") == "recall_any@1")
    )
    delta = {(r["system"], r["average"]): r["delta"] for r in sig.iter_rows(named=True)}
    assert delta[("good", "strict")] == 1.0
    assert delta[("base", "strict")] == 0.0


def test_session_keys_rank_each_session_at_its_best_turn_then_the_rest_in_haystack_order() -> None:
    from convlab.evaluation.lme_official import OfficialLabels
    from convlab.evaluation.lme_scores import session_key_rankings

    turns = pl.DataFrame(
        {
            "query_id": ["q"] * 3,
            "session_id": ["s1", "s1", "answer_2"],
            "key": ["s1_1", "s1_3", "answer_2_1"],
        }
    )
    sessions = pl.DataFrame(
        {
            "query_id": ["q"] * 4,
            "session_id": ["s0", "s1", "answer_2", "s3"],
            "position": [0, 1, 2, 3],
            "key": ["s0", "s1", "answer_2", "s3"],
            "gold": [False, False, True, False],
        },
        schema_overrides={"position": pl.Int32},
    )
    ranked = pl.DataFrame(
        {
            "query_id": ["q"] * 3,
            "rank": [1, 2, 3],
            "key": ["s1_1", "answer_2_1", "s1_3"],
            "gold": [False, True, False],
        }
    )
    labels = OfficialLabels(pl.DataFrame(), turns, sessions)
    out = session_key_rankings(ranked, labels)
    # s1 at rank 1 (its best turn), answer_2 at 2; s0 and s3 have no turn key: haystack order
    assert out["key"].to_list() == ["s1", "answer_2", "s0", "s3"]
    assert out["rank"].to_list() == [1, 2, 3, 4]
    assert out["gold"].to_list() == [False, True, False, False]
