"""Judging: pooling, shuffling, the crash-safe qrels log, resuming, and agreement."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from convlab.errors import LoadError
from convlab.evaluation.judgments import labels, read_judgments
from convlab.judge import (
    Candidate,
    JudgmentLog,
    agreement,
    build_pool,
    judge_loop,
    pool_hits,
    render,
    shuffle_pool,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _hits(query: str, docs: list[str]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "query_id": [query] * len(docs),
            "rank": list(range(1, len(docs) + 1)),
            "doc_id": docs,
            "conversation_id": ["c"] * len(docs),
            "unit_id": [f"u-{d}" for d in docs],
        }
    )


def _cand(q: str, d: str) -> Candidate:
    return Candidate(q, "query", d, "c", "text", (), ())


def test_pool_takes_each_systems_top_depth_and_dedups() -> None:
    a = pl.concat([_hits("q1", ["x", "y", "z"]), _hits("q2", ["x"])])
    b = _hits("q1", ["y", "w", "x"])
    pool = pool_hits({"A": a, "B": b}, depth=2)
    # q1: A's top 2 = x, y; B's top 2 = y, w -> {w, x, y}; z (A rank 3) is below the depth
    assert pool.select("query_id", "doc_id").rows() == [
        ("q1", "w"),
        ("q1", "x"),
        ("q1", "y"),
        ("q2", "x"),
    ]
    by_doc = {
        (q, d): (s, r)
        for q, d, s, r in pool.select("query_id", "doc_id", "systems", "best_rank").iter_rows()
    }
    assert by_doc[("q1", "y")] == (["A", "B"], 1)
    assert by_doc[("q1", "w")] == (["B"], 2)


def test_pool_rejects_a_depth_below_one() -> None:
    with pytest.raises(ValueError, match="depth"):
        pool_hits({"A": _hits("q", ["x"])}, depth=0)


def test_shuffle_is_seeded_and_hides_the_systems_order() -> None:
    a = _hits("q1", [f"d{i}" for i in range(8)])
    b = _hits("q1", [f"d{i}" for i in range(8, 12)])
    one = shuffle_pool(pool_hits({"A": a, "B": b}, 10), seed=7)["doc_id"].to_list()
    swapped = shuffle_pool(pool_hits({"B": b, "A": a}, 10), seed=7)["doc_id"].to_list()
    other_seed = shuffle_pool(pool_hits({"A": a, "B": b}, 10), seed=8)["doc_id"].to_list()
    assert one == swapped  # the order of the systems does not show
    assert sorted(one) == sorted(f"d{i}" for i in range(12))
    assert one != other_seed
    # neither A's ranking first nor the sorted ids: the systems' ranks do not show either
    assert one[:8] != [f"d{i}" for i in range(8)]


def test_shuffle_of_one_query_does_not_depend_on_the_others() -> None:
    a = pl.concat([_hits("q1", ["a", "b", "c", "d"]), _hits("q2", ["e", "f"])])
    both = shuffle_pool(pool_hits({"A": a}, 10), seed=3)
    alone = shuffle_pool(pool_hits({"A": _hits("q1", ["a", "b", "c", "d"])}, 10), seed=3)
    assert both.filter(pl.col("query_id") == "q1")["doc_id"].to_list() == alone["doc_id"].to_list()


def test_record_appends_one_line_per_judgment(tmp_path: Path) -> None:
    path = tmp_path / "qrels.jsonl"
    log = JudgmentLog(path, assessor="ana")
    log.record(_cand("q1", "d1"), "r", now=NOW)
    log.record(_cand("q1", "d2"), "3", now=NOW)
    log.record(_cand("q1", "d3"), "s", now=NOW)
    lines = path.read_text().splitlines()
    assert [json.loads(x)["grade"] for x in lines] == [2, 0, None]
    assert json.loads(lines[0]) == {
        "query_id": "q1",
        "doc_id": "d1",
        "grade": 2,
        "assessor": "ana",
        "time": "2026-03-01T12:00:00+00:00",
    }
    with pytest.raises(ValueError, match="unknown judgment 'x'"):
        log.record(_cand("q1", "d4"), "x")


def test_resume_skips_what_this_assessor_judged(tmp_path: Path) -> None:
    path = tmp_path / "qrels.jsonl"
    pool = [_cand("q1", d) for d in ("d1", "d2", "d3")]
    JudgmentLog(path, assessor="ana").record(pool[0], "relevant", now=NOW)
    JudgmentLog(path, assessor="bo").record(pool[1], "not", now=NOW)
    resumed = JudgmentLog(path, assessor="ana")
    assert [c.doc_id for c in resumed.pending(pool)] == ["d2", "d3"]
    assert [c.doc_id for c in JudgmentLog(path, assessor="bo").pending(pool)] == ["d1", "d3"]


def test_a_torn_last_line_is_reported_dropped_and_appending_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "qrels.jsonl"
    log = JudgmentLog(path, assessor="ana")
    log.record(_cand("q1", "d1"), "r", now=NOW)
    log.record(_cand("q1", "d2"), "p", now=NOW)
    # a kill in the middle of the third write: half a line, no newline
    with path.open("a") as fh:
        fh.write('{"query_id": "q1", "doc_id": "d3", "gra')
    judgments, torn = read_judgments(path)
    assert [j.doc_id for j in judgments] == ["d1", "d2"]
    assert torn == '{"query_id": "q1", "doc_id": "d3", "gra'
    with pytest.warns(UserWarning, match="torn"):
        resumed = JudgmentLog(path, assessor="ana")
    pool = [_cand("q1", d) for d in ("d1", "d2", "d3")]
    assert [c.doc_id for c in resumed.pending(pool)] == ["d3"]
    resumed.record(pool[2], "n", now=NOW)
    again, torn = read_judgments(path)
    assert torn is None
    assert [(j.doc_id, j.grade) for j in again] == [("d1", 2), ("d2", 1), ("d3", 0)]


def test_a_bad_line_inside_the_file_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "qrels.jsonl"
    good = json.dumps({"query_id": "q", "doc_id": "d", "grade": 1, "assessor": "a", "time": "t"})
    path.write_text(good + "\n" + good.replace('"grade": 1', '"grade": 5') + "\n" + good + "\n")
    with pytest.raises(LoadError, match=r"qrels.jsonl.*2.*grade"):
        read_judgments(path)


def test_labels_average_assessors_and_keep_the_latest_rejudgment(tmp_path: Path) -> None:
    path = tmp_path / "qrels.jsonl"
    ana, bo = JudgmentLog(path, assessor="ana"), JudgmentLog(path, assessor="bo")
    ana.record(_cand("q", "d1"), "n", now=NOW)
    ana.record(_cand("q", "d1"), "r", now=NOW)  # ana changed her mind: 2
    bo.record(_cand("q", "d1"), "p", now=NOW)  # mean (2 + 1) / 2 = 1.5 -> 2
    ana.record(_cand("q", "d2"), "p", now=NOW)
    bo.record(_cand("q", "d2"), "n", now=NOW)  # mean 0.5 -> 1
    bo.record(_cand("q", "d3"), "s", now=NOW)  # skipped: not a label
    got = labels(read_judgments(path)[0])
    assert got.rows() == [("q", "d1", 2, True), ("q", "d2", 1, True)]
    strict = labels(read_judgments(path)[0], min_grade=2)
    assert strict["relevant"].to_list() == [True, False]


def test_kappa_matches_a_hand_computed_value(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    la, lb = JudgmentLog(a, assessor="ana"), JudgmentLog(b, assessor="bo")
    # ten docs both graded, binary: ana 2,2,2,2,2,0,0,0,0,0; bo 2,2,2,2,0,0,0,0,0,2
    grades_a = "rrrrrnnnnn"
    grades_b = "rrrrnnnnnr"
    for i, (x, y) in enumerate(zip(grades_a, grades_b, strict=True)):
        la.record(_cand("q", f"d{i}"), x, now=NOW)
        lb.record(_cand("q", f"d{i}"), y, now=NOW)
    la.record(_cand("q", "only-a"), "r", now=NOW)  # outside the overlap
    lb.record(_cand("q", "d-skip"), "s", now=NOW)
    got = agreement(a, b)
    # p_o = 8/10; p_e = 0.5*0.5 + 0.5*0.5 = 0.5; kappa = (0.8 - 0.5) / (1 - 0.5) = 0.6
    assert got.overlap == 10
    assert got.observed == pytest.approx(0.8)
    assert got.kappa == pytest.approx(0.6)


def test_agreement_needs_an_overlap(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    JudgmentLog(a, assessor="ana").record(_cand("q", "d1"), "r", now=NOW)
    JudgmentLog(b, assessor="bo").record(_cand("q", "d2"), "r", now=NOW)
    with pytest.raises(ValueError, match="in common"):
        agreement(a, b)


def test_build_pool_gives_candidates_with_context_and_terms() -> None:
    from convlab import schema
    from convlab.embed import HashEmbedder
    from convlab.evaluation.datasets import LabelledData
    from convlab.systems.system import System
    from tests.helpers import corpus

    c = corpus(
        {
            "c1": [
                ("user", "The deploy script fails with a permission error."),
                ("assistant", "Run chmod +x deploy.sh and try again."),
                ("user", "Now the nginx config is wrong."),
                ("assistant", "Reload nginx after editing the site file."),
            ]
        }
    )
    q = schema.frame(
        [
            {
                "query_id": "q1",
                "text": "deploy permission error",
                "conversation_id": None,
                "relevant": [],
                "category": None,
                "answer": None,
            }
        ],
        schema.QUERIES,
    )
    data = LabelledData("t", c, q)
    systems = [
        System(name="turn_pair", strategy="turn_pair"),
        System(name="bm25", strategy="message", retrieval="bm25"),
    ]
    pool = build_pool(data, systems, embedder=HashEmbedder(), depth=10, seed=1)
    # a chat of two turns: both systems find both turns; pooled once each
    assert sorted(p.doc_id for p in pool) == ["c1:t0", "c1:t1"]
    assert [p.position for p in pool] == [1, 2]
    assert {p.total for p in pool} == {2}
    first = next(p for p in pool if p.doc_id == "c1:t0")
    assert "permission error" in first.text
    assert first.terms == ("deploy", "error", "permission")
    assert any(t for _, t, target in first.context if target)


def test_judged_at_k_and_bpref_count_judged_non_relevant_docs() -> None:
    from convlab.evaluation.metrics import per_query

    hits = pl.DataFrame(
        {"query_id": ["q"] * 4, "doc_id": ["a", "x", "b", "c"], "rank": [1, 2, 3, 4]}
    )
    queries = pl.DataFrame({"query_id": ["q"], "relevant": [["a", "c"]]})
    judged = pl.DataFrame(
        {"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "relevant": [True, False, True]}
    )
    got = dict(
        per_query(hits, queries, ["judged@2", "judged@4", "bpref", "recall@4"], judged=judged)
        .select("metric", "value")
        .iter_rows()
    )
    # top 2 = a (judged), x (not): 1/2; top 4: a, b, c judged of 4: 3/4
    assert got["judged@2"] == pytest.approx(0.5)
    assert got["judged@4"] == pytest.approx(0.75)
    # R = {a, c}, N = {b}: a has no judged non-relevant above it (1 - 0/1 = 1); c has b above it
    # (1 - 1/min(2, 1) = 0); x is unjudged and does not count: bpref = (1 + 0) / 2
    assert got["bpref"] == pytest.approx(0.5)
    assert got["recall@4"] == pytest.approx(1.0)
    # without the judgments b is unjudged: judged@4 = 2/4, and bpref sees no non-relevant doc
    bare = dict(
        per_query(hits, queries, ["judged@4", "bpref"]).select("metric", "value").iter_rows()
    )
    assert bare["judged@4"] == pytest.approx(0.5)
    assert bare["bpref"] == pytest.approx(1.0)


def test_a_labelled_folder_reads_its_judgments_and_shared_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transcripts: Path
) -> None:
    from convlab.evaluation.datasets import load_labelled

    monkeypatch.setenv("CONVLAB_SHARED", str(transcripts.parent))
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "sources.json").write_text(
        json.dumps({"transcripts": ["transcripts/codex/kvsankar_real_redacted"], "docs": "message"})
    )
    (folder / "queries.jsonl").write_text(
        json.dumps({"query_id": "q1", "text": "what did codex say"})
        + "\n"
        + json.dumps({"query_id": "q2", "text": "unjudged query"})
        + "\n"
    )
    log = JudgmentLog(folder / "qrels.jsonl", assessor="ana")
    conv = "019e9625-802f-7e91-840a-cfe88d14117a"
    log.record(_cand("q1", f"{conv}:m3"), "p", now=NOW)
    log.record(_cand("q1", f"{conv}:m2"), "n", now=NOW)
    data = load_labelled(folder)
    assert data.name == "bench"
    assert set(data.corpus.conversations["doc_kind"]) == {"message"}  # docs are messages
    assert set(data.corpus.conversations["kind"]) == {"chat"}  # speakers are not changed
    assert dict(data.queries.select("query_id", "relevant").iter_rows()) == {
        "q1": [f"{conv}:m3"],
        "q2": [],
    }
    assert data.judged is not None
    assert data.judged.select("doc_id", "grade").rows() == [(f"{conv}:m2", 0), (f"{conv}:m3", 1)]
    monkeypatch.setenv("CONVLAB_SHARED", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="CONVLAB_SHARED"):
        load_labelled(folder)


def test_render_marks_query_terms_and_the_target() -> None:
    c = Candidate(
        "q1",
        "flaky fixture",
        "c:m1",
        "c",
        "The Fixture was flaky",
        (("user", "why flaky?", False), ("assistant", "shared tmp dir", True)),
        ("fixture", "flaky"),
        position=2,
        total=5,
    )
    assert render(c).splitlines() == [
        "== q1 (2 of 5): flaky fixture",
        "-- doc c:m1",
        "The [Fixture] was [flaky]",
        "-- context (what its unit was embedded with; > the target)",
        "  user: why [flaky]?",
        "> assistant: shared tmp dir",
    ]


def test_the_loop_records_keys_asks_again_and_stops_on_q(tmp_path: Path) -> None:
    path = tmp_path / "qrels.jsonl"
    pool = [_cand("q1", d) for d in ("d1", "d2", "d3", "d4")]
    keys = iter(["r", "x", "2", "q"])
    out: list[str] = []
    n = judge_loop(
        pool, JudgmentLog(path, assessor="ana"), read=lambda _: next(keys), write=out.append
    )
    assert n == 2
    assert [(j.doc_id, j.grade) for j in read_judgments(path)[0]] == [("d1", 2), ("d2", 1)]
    assert "unknown key 'x'" in out
    assert out[-1] == "stopped: 2 judged now, 2 left"
    # resuming shows the third candidate as "3 of 4"; end of input stops like q
    keys = iter(["n"])

    def read(_: str) -> str:
        try:
            return next(keys)
        except StopIteration:
            raise EOFError from None

    out.clear()
    n = judge_loop(pool, JudgmentLog(path, assessor="ana"), read=read, write=out.append)
    assert n == 1
    assert out[0] == "\n[3 of 4]"
    assert [(j.doc_id, j.grade) for j in read_judgments(path)[0]][-1] == ("d3", 0)


def test_cli_judges_from_stdin_and_reports_agreement(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    transcripts: Path,
) -> None:
    import io

    from convlab.app.cli import main

    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"query_id": "q1", "text": "which tests failed"}) + "\n")
    data = transcripts / "codex" / "kvsankar_real_redacted"
    common = ["--data", str(data), "--embedder", "hash", "--cache", str(tmp_path / "cache")]
    qa, qb = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    monkeypatch.setattr("sys.stdin", io.StringIO("r\nn\nr\nr\nr\n"))
    args = [
        "judge",
        str(queries),
        *common,
        "--docs",
        "message",
        "--systems",
        "message,bm25:message",
    ]
    assert main([*args, "--qrels", str(qa), "--assessor", "ana"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("r\nr\nr\nr\nr\n"))
    assert main([*args, "--qrels", str(qb), "--assessor", "bo"]) == 0
    ja, jb = read_judgments(qa)[0], read_judgments(qb)[0]
    assert len(ja) == len(jb) >= 2
    assert [j.doc_id for j in ja] == [j.doc_id for j in jb]  # same seed, same order
    capsys.readouterr()
    assert main(["judge", "agreement", str(qa), str(qb)]) == 0
    assert f"on {len(ja)} docs graded by both" in capsys.readouterr().out
    assert main(["judge", str(queries), "--data", str(data)]) == 2
    assert "--qrels, --assessor" in capsys.readouterr().err


def test_the_real_sessions_benchmark_loads_and_its_judgments_point_at_messages(
    monkeypatch: pytest.MonkeyPatch, transcripts: Path
) -> None:
    """data/real_sessions: the transcripts live in ../shared (fails under CI when missing)."""
    from convlab.evaluation.datasets import load_labelled
    from convlab.paths import REPO_ROOT
    from convlab.pipeline.chunks import chunks

    monkeypatch.setenv("CONVLAB_SHARED", str(transcripts.parent))
    data = load_labelled(REPO_ROOT / "data" / "real_sessions")
    assert data.queries.height == 126
    assert data.judged is not None
    # every query was judged over its whole pool, topped up after sub-agents became docs;
    # 3,137 judgments, 382 at least partly relevant
    assert set(data.judged["query_id"]) == set(data.queries["query_id"])
    assert data.judged.height == 3137
    assert data.judged["grade"].value_counts().sort("grade").rows() == [
        (0, 2755),
        (1, 199),
        (2, 183),
    ]
    assert (data.queries["relevant"].list.len() > 0).sum() == 102
    # the 24 no-answer queries are judged, with no relevant doc
    none = data.queries.filter(pl.col("category") == "no-answer")
    assert none.height == 24
    assert none["relevant"].list.len().sum() == 0
    # the sub-agent's messages are judged docs
    assert data.judged["doc_id"].str.contains(":agent-").sum() > 0
    # judged docs are messages with text in the corpus
    s = chunks(data.corpus)
    docs = set(
        s.select(pl.format("{}:m{}", "conversation_id", "message_index")).to_series().to_list()
    )
    assert set(data.judged["doc_id"]) <= docs
    judgments, torn = read_judgments(REPO_ROOT / "data" / "real_sessions" / "qrels.jsonl")
    assert torn is None
    assert {j.assessor for j in judgments} == {"helper-judge (AI assistant)"}


def test_judge_panel_records_buttons_and_keys_and_escapes_text(tmp_path: Path) -> None:
    from convlab.app.judge_panel import JudgePanel

    path = tmp_path / "qrels.jsonl"
    pool = [
        Candidate("q1", "flaky <b>fixture</b>", f"d{i}", "c", f"the fixture <script>{i}", (), ())
        for i in range(4)
    ]
    JudgmentLog(path, assessor="ana").record(pool[0], "n", now=NOW)
    panel = JudgePanel(pool, JudgmentLog(path, assessor="ana"))
    assert "2 of 4" in panel.progress.value  # d0 was judged before: resumes at the second
    assert "<script>" not in panel.view.value
    assert "&lt;script&gt;" in panel.view.value
    assert "<mark>fixture</mark>" in panel.view.value
    panel.buttons[0].click()  # Relevant
    panel.keys.value = "2"  # Partly, by the keyboard
    assert panel.keys.value == ""
    assert "4 of 4" in panel.progress.value
    panel.keys.value = "s"
    assert "all judged" in panel.progress.value
    got = [(j.doc_id, j.grade) for j in read_judgments(path)[0]]
    assert got == [("d0", 0), ("d1", 2), ("d2", 1), ("d3", None)]


def test_a_whole_last_record_without_newline_is_kept_and_the_next_goes_on_its_own_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "qrels.jsonl"
    rec = {"query_id": "q1", "doc_id": "d1", "grade": 2, "assessor": "ana", "time": "t"}
    path.write_text(json.dumps(rec))  # written by hand, no final newline
    log = JudgmentLog(path, assessor="ana")
    assert log.torn is None
    log.record(_cand("q1", "d2"), "n", now=NOW)
    assert [(j.doc_id, j.grade) for j in read_judgments(path)[0]] == [("d1", 2), ("d2", 0)]
