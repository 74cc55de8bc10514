"""LongMemEval: the fixture (written in the published format) read by hand; scores worked by hand.

The fixture ``tests/fixtures/longmemeval/longmemeval_fixture.json`` holds three questions over six
distinct sessions: q1 (haystack sharegpt_a, answer_1a, ultrachat_b; answer in answer_1a's first
user turn), q2 (ultrachat_b, answer_2a, ultrachat_c, answer_2b, sharegpt_a; answers in the first
user turn of answer_2a and answer_2b) and q3_abs (an abstention question). Every session
alternates user/assistant: 2 messages each, answer_1a 4; 14 messages in all.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import ir_measures
import polars as pl
import pytest

from convlab.embed import HashEmbedder
from convlab.evaluation.config import LONGMEMEVAL_METRICS, EvalConfig
from convlab.evaluation.datasets import LabelledData, load_labelled
from convlab.evaluation.evaluate import evaluate
from convlab.evaluation.metrics import collapse_to_sessions, per_query
from convlab.loaders import LoadError, detect, load
from convlab.loaders.longmemeval import parse_haystack_date, read_longmemeval
from convlab.systems.system import System

FIXTURE = Path(__file__).parent.parent / "fixtures" / "longmemeval" / "longmemeval_fixture.json"


@pytest.fixture(scope="module")
def data() -> LabelledData:
    return load_labelled(FIXTURE, strict=True)


def test_fixture_loads_with_counts_by_hand(data: LabelledData) -> None:
    assert detect(FIXTURE) == "longmemeval"
    assert data.name == "longmemeval_fixture"
    assert data.corpus.conversations.height == 6  # sessions shared by questions read once
    assert data.corpus.messages.height == 14
    assert set(data.corpus.conversations["kind"]) == {"chat"}
    assert data.corpus.report.n_skipped == 0
    rel = dict(data.queries.select("query_id", "relevant").iter_rows())
    # docs are turns (user message + reply); has_answer marks the first user message
    assert {q: list(r) for q, r in rel.items()} == {
        "q1": ["answer_1a:t0"],
        "q2": ["answer_2a:t0", "answer_2b:t0"],
        "q3_abs": [],  # abstention: not scored on retrieval
    }
    assert data.queries["conversation_id"].null_count() == 3  # scoped by haystacks instead
    assert data.haystacks is not None
    assert data.sessions is not None
    hay = data.haystacks.group_by("query_id", maintain_order=True).agg("conversation_id")
    assert dict(hay.iter_rows())["q2"] == [
        "ultrachat_b",
        "answer_2a",
        "ultrachat_c",
        "answer_2b",
        "sharegpt_a",
    ]
    assert data.haystacks.height == 3 + 5 + 3
    sessions = {q: list(r) for q, r in data.sessions.iter_rows()}
    assert sessions == {"q1": ["answer_1a"], "q2": ["answer_2a", "answer_2b"], "q3_abs": []}
    assert data.cleaning == {
        "questions": 3,
        "abstention": 1,
        "sessions": 6,
        "session_copies": 11,
        "answer_turns": 3,
        "questions_without_answer_turn": 0,
        "answer_sessions_outside_haystack": 0,
    }
    cats = dict(data.queries.select("query_id", "category").iter_rows())
    assert cats["q1"] == "single-session-user"


def test_messages_carry_session_date_and_ids(data: LabelledData) -> None:
    m = data.corpus.messages.filter(pl.col("conversation_id") == "answer_1a")
    assert m["role"].to_list() == ["user", "assistant", "user", "assistant"]
    assert m["external_id"].to_list() == [f"answer_1a_{i}" for i in (1, 2, 3, 4)]
    t = m["timestamp"][0]
    assert (t.year, t.month, t.day, t.hour, t.minute) == (2023, 5, 4, 20, 15)
    assert parse_haystack_date("2023/05/20 (Sat) 02:21") is not None
    assert parse_haystack_date("yesterday") is None


def test_plain_load_reads_it_too() -> None:
    c = load(FIXTURE, strict=True)
    assert c.conversations.height == 6
    assert c.queries is not None
    assert c.queries.height == 3


def _items() -> list[dict]:
    return json.loads(FIXTURE.read_text())


def test_a_session_whose_copies_differ_is_named(tmp_path: Path) -> None:
    items = _items()
    items[1]["haystack_sessions"][4][0]["content"] = "changed"  # q2's copy of sharegpt_a
    f = tmp_path / "lme.json"
    f.write_text(json.dumps(items))
    with pytest.raises(LoadError, match=r"lme\.json:1: question q2: session sharegpt_a differs"):
        read_longmemeval(f, strict=True)
    corpus, _ = read_longmemeval(f)
    assert corpus.report.skipped["reason"].to_list() == [
        "question q2: session sharegpt_a differs from its first copy"
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda it: it[0].pop("haystack_dates"), r"question 0 \(q1\): 'haystack_dates' missing"),
        (lambda it: it[1]["haystack_dates"].pop(), r"question 1 \(q2\): .* differ in length"),
        (lambda it: it.append(dict(it[0])), r"question 3: question_id 'q1' given twice"),
    ],
)
def test_bad_items_name_file_and_question(tmp_path: Path, change, message: str) -> None:  # type: ignore[no-untyped-def]
    items = _items()
    change(items)
    f = tmp_path / "lme.json"
    f.write_text(json.dumps(items))
    with pytest.raises(LoadError, match=r"lme\.json:1: " + message):
        read_longmemeval(f, strict=True)
    corpus, labels = read_longmemeval(f)  # lenient: the question is left out, and counted
    assert corpus.report.n_skipped == 1
    assert labels.report["questions"] == (3 if "twice" in message else 2)


def test_not_a_longmemeval_list(tmp_path: Path) -> None:
    f = tmp_path / "lme.json"
    f.write_text('{"question_id": "x"}')
    with pytest.raises(LoadError, match="not a non-empty JSON list"):
        read_longmemeval(f)


# -- scores worked by hand --------------------------------------------------------------------
# One query; relevant turns A:t1 and B:t0, relevant sessions A and B.
# Turn ranking: A:t0, A:t1, C:t0, B:t0, C:t1 -> sessions (first occurrence): A, C, B.
HITS = pl.DataFrame(
    {
        "query_id": ["q"] * 5,
        "doc_id": ["A:t0", "A:t1", "C:t0", "B:t0", "C:t1"],
        "conversation_id": ["A", "A", "C", "B", "C"],
        "rank": [1, 2, 3, 4, 5],
    }
)
QUERIES = pl.DataFrame(
    {"query_id": ["q"], "relevant": [["A:t1", "B:t0"]]},
    schema={"query_id": pl.String, "relevant": pl.List(pl.String)},
)
SESSIONS = pl.DataFrame(
    {"query_id": ["q"], "relevant": [["A", "B"]]},
    schema={"query_id": pl.String, "relevant": pl.List(pl.String)},
)


def test_turn_and_session_scores_by_hand() -> None:
    v = dict(
        per_query(HITS, QUERIES, LONGMEMEVAL_METRICS, sessions=SESSIONS)
        .select("metric", "value")
        .iter_rows()
    )
    ideal = 1 + 1 / math.log2(3)  # two relevant docs at ranks 1 and 2
    # turn level: relevant at ranks 2 and 4
    assert (v["success@1"], v["success@5"], v["success@10"]) == (0.0, 1.0, 1.0)
    assert (v["recall_all@1"], v["recall_all@5"]) == (0.0, 1.0)
    assert v["ndcg@1"] == 0.0
    assert v["ndcg@5"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)
    # session level: A, C, B -> relevant at ranks 1 and 3
    assert collapse_to_sessions(HITS).rows() == [("q", "A", 1), ("q", "C", 2), ("q", "B", 3)]
    assert (v["session:success@1"], v["session:recall_all@1"]) == (1.0, 0.0)
    assert v["session:recall_all@5"] == 1.0
    assert v["session:ndcg@1"] == 1.0
    assert v["session:ndcg@5"] == pytest.approx((1 + 1 / math.log2(4)) / ideal)


def _turn2session(ranked_sessions: list[str], correct: set[str], k: int) -> tuple[float, float]:
    """LongMemEval's evaluate_retrieval_turn2session (recall_any, recall_all), written anew.

    k is widened until the first k' ranked turns hold k distinct sessions (or all turns).
    """
    k_eff = k
    while k_eff <= len(ranked_sessions) and len(set(ranked_sessions[:k_eff])) < k:
        k_eff += 1
    top = set(ranked_sessions[:k_eff])
    return float(bool(top & correct)), float(correct <= top)


def test_session_level_matches_longmemeval_and_ir_measures() -> None:
    names = [f"session:{m}@{k}" for m in ("success", "recall_all") for k in (1, 2, 3, 4)]
    v = dict(per_query(HITS, QUERIES, names, sessions=SESSIONS).select("metric", "value").rows())
    ranked = HITS["conversation_id"].to_list()
    for k in (1, 2, 3, 4):
        anyhit, allhit = _turn2session(ranked, {"A", "B"}, k)
        assert (v[f"session:success@{k}"], v[f"session:recall_all@{k}"]) == (anyhit, allhit)
    # nDCG on the collapsed ranking is ir_measures' nDCG over the session run
    qrels = [ir_measures.Qrel("q", s, 1) for s in ("A", "B")]
    run = [ir_measures.ScoredDoc("q", s, 10.0 - r) for s, r in [("A", 1), ("C", 2), ("B", 3)]]
    ref = ir_measures.calc_aggregate([ir_measures.nDCG @ 5], qrels, run)[ir_measures.nDCG @ 5]
    ours = per_query(HITS, QUERIES, ["session:ndcg@5"], sessions=SESSIONS)["value"].item()
    assert ours == pytest.approx(ref)


def test_session_metric_without_session_labels() -> None:
    with pytest.raises(ValueError, match="session-level relevance"):
        per_query(HITS, QUERIES, ["session:success@5"])


# -- the evaluation, scoped per question to its haystack --------------------------------------
def test_evaluate_searches_each_question_in_its_haystack(data: LabelledData) -> None:
    systems = [System(name="bm25", strategy="message", retrieval="bm25")]
    config = EvalConfig(scope="haystack", metrics=LONGMEMEVAL_METRICS, budgets=(256,))
    ev = evaluate(data, systems, embedder=HashEmbedder(), config=config, progress=False)
    hits = ev.hits["bm25"]
    assert data.haystacks is not None
    allowed = set(data.haystacks.select("query_id", "conversation_id").iter_rows())
    assert hits.height > 0
    assert set(hits.select("query_id", "conversation_id").iter_rows()) <= allowed
    scored = set(ev.per_query["query_id"])
    assert "q3_abs" not in scored  # abstention: no relevant docs, not scored
    v = {m: x for q, m, x in ev.per_query.select("query_id", "metric", "value").rows() if q == "q2"}
    # q2 asks about a gift for a sister's birthday: only the two answer turns hold "birthday"
    # (with "sister" or "gift"); the others share at most "what" or "for" with it, so BM25
    # ranks the answer turns first and second, and their sessions are the top two sessions.
    assert hits.filter(pl.col("query_id") == "q2")["doc_id"].to_list()[:2] == [
        "answer_2a:t0",
        "answer_2b:t0",
    ]
    assert (v["success@1"], v["recall_all@1"], v["recall_all@5"], v["ndcg@5"]) == (1, 0, 1, 1)
    assert (v["session:success@1"], v["session:recall_all@1"]) == (1.0, 0.0)
    assert v["session:ndcg@10"] == 1.0
    assert ev.config["data"]["name"] == "longmemeval_fixture"


def test_scope_must_fit_the_data(data: LabelledData) -> None:
    systems = [System(name="bm25", strategy="message", retrieval="bm25")]
    with pytest.raises(ValueError, match="use scope 'haystack'"):
        evaluate(data, systems, embedder=HashEmbedder(), config=EvalConfig(), progress=False)
    with pytest.raises(ValueError, match="scope must be one of conversation, haystack, corpus"):
        EvalConfig(scope="everywhere")


def test_select_keeps_questions_whose_haystack_was_selected(data: LabelledData) -> None:
    part = data.select(["sharegpt_a", "answer_1a", "ultrachat_b", "ultrachat_c"])
    assert part.queries["query_id"].to_list() == ["q1", "q3_abs"]
    assert part.haystacks is not None
    assert set(part.haystacks["query_id"]) == {"q1", "q3_abs"}
    assert part.corpus.conversations.height == 4


def test_every_keeps_every_nth_question_and_its_haystacks(data: LabelledData) -> None:
    # questions q1, q2, q3_abs: every 2nd is q1 and q3_abs; their haystacks are q1's three
    # sessions and q3_abs's three, four distinct (answer_2a and answer_2b are q2's alone)
    part = data.every(2)
    assert part.queries["query_id"].to_list() == ["q1", "q3_abs"]
    assert sorted(part.corpus.conversations["conversation_id"]) == [
        "answer_1a",
        "sharegpt_a",
        "ultrachat_b",
        "ultrachat_c",
    ]
    assert part.sessions is not None
    assert set(part.sessions["query_id"]) <= {"q1", "q3_abs"}
    assert part.cleaning["every"] == 2
    assert data.every(1) is data
    with pytest.raises(ValueError, match="n >= 1"):
        data.every(0)


def test_every_keeps_the_official_labels_of_the_questions_kept() -> None:
    part = load_labelled(FIXTURE, protocol="longmemeval").every(2)
    assert part.official is not None
    assert part.official.questions["query_id"].to_list() == ["q1", "q3_abs"]
    assert set(part.official.turns["query_id"]) == {"q1", "q3_abs"}


@pytest.mark.parametrize("bad", ["0", "-3", "two"])
def test_every_must_be_a_whole_number_of_at_least_one(bad: str, capsys) -> None:  # type: ignore[no-untyped-def]
    from convlab.app.cli.eval import main

    with pytest.raises(SystemExit) as exc:
        main(["--data", str(FIXTURE), "--every", bad])
    assert exc.value.code == 2
    assert "--every" in capsys.readouterr().err


@pytest.mark.model
@pytest.mark.slow
def test_eval_run_on_the_fixture(tmp_path: Path) -> None:
    """``make eval DATA=longmemeval_s.json`` runs ``eval.run --data``; here on the fixture."""
    from convlab.app.cli.eval import main

    out = tmp_path / "run"
    cache = tmp_path / "cache"
    args = ["--data", str(FIXTURE), "--strategies", "message", "--out", str(out)]
    assert main([*args, "--cache", str(cache)]) == 0
    report = (out / "report.md").read_text()
    assert report.startswith("# Strategy comparison on longmemeval_fixture")
    assert "scope: haystack" in report
    assert "## LongMemEval measures, session level" in report
    config = json.loads((out / "config.json").read_text())
    assert "session:recall_all@10" in config["config"]["metrics"]


@pytest.mark.parametrize("protocol", ["convlab", "longmemeval"])
def test_questions_carry_their_date(protocol: str) -> None:
    """Each question's ``question_date`` (2023/05/10 12:00 in the fixture), what the search's
    time boost reads relative times from; the loader's labels hold it too."""
    queries = load_labelled(FIXTURE, strict=True, protocol=protocol).queries
    assert queries.columns[-1] == "time"
    assert queries["time"].to_list() == [datetime(2023, 5, 10, 12, tzinfo=UTC)] * 3
    _, labels = read_longmemeval(FIXTURE)
    assert labels.times is not None
    assert labels.times.rows() == [
        (q, datetime(2023, 5, 10, 12, tzinfo=UTC)) for q in labels.queries["query_id"].to_list()
    ]
