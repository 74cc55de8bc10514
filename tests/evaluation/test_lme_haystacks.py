"""LongMemEval haystacks (convlab.evaluation.lme_haystacks), on a hand-made oracle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.lme_haystacks import build_haystacks, filler_id


def _session(text: str, answer: bool = False) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"{text} question", "has_answer": answer},
        {"role": "assistant", "content": f"{text} reply", "has_answer": False},
    ]


def _question(qid: str, sessions: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """A question whose evidence is ``{id: (date, text)}``, the first turn of each gold."""
    return {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": f"what about {qid}?",
        "answer": qid,
        "question_date": "2023/12/31 (Sun) 23:59",
        "haystack_dates": [d for d, _ in sessions.values()],
        "haystack_session_ids": list(sessions),
        "haystack_sessions": [_session(t, answer=True) for _, t in sessions.values()],
        "answer_session_ids": list(sessions),
    }


@pytest.fixture
def oracle() -> list[dict[str, Any]]:
    """Five questions; q4_abs repeats q4's session under another id (as LongMemEval's do)."""
    return [
        _question(
            "q1",
            {
                "answer_a_1": ("2023/03/01 (Wed) 10:00", "alpha"),
                "answer_a_2": ("2023/01/01 (Sun) 10:00", "beta"),
            },
        ),
        _question("q2", {"answer_b": ("2023/02/01 (Wed) 10:00", "gamma")}),
        _question("q3", {"answer_c": ("2023/04/01 (Sat) 10:00", "delta")}),
        _question("q4", {"answer_d": ("2023/05/01 (Mon) 10:00", "eps")}),
        _question("q4_abs", {"answer_d_abs": ("2023/05/02 (Tue) 10:00", "eps")}),
    ]


def test_filler_id() -> None:
    """``answer`` becomes ``filler``; an id without it gets a prefix."""
    assert filler_id("answer_4be1b6b4_2") == "filler_4be1b6b4_2"
    assert filler_id("sharegpt_x") == "filler_sharegpt_x"


def test_evidence_kept_filler_from_others(oracle: list[dict[str, Any]]) -> None:
    """Evidence kept as is; filler only from other questions, never gold, flags cleared."""
    made = {q["question_id"]: q for q in build_haystacks(oracle, sessions=3, seed=0)}
    own = {q["question_id"]: set(q["haystack_session_ids"]) for q in oracle}
    for qid, q in made.items():
        ids = q["haystack_session_ids"]
        assert own[qid] <= set(ids)
        assert q["answer_session_ids"] == next(
            o["answer_session_ids"] for o in oracle if o["question_id"] == qid
        )
        for sid, turns in zip(ids, q["haystack_sessions"], strict=True):
            if sid in own[qid]:
                assert turns[0]["has_answer"] is True
                continue
            assert "answer" not in sid
            assert sid.startswith("filler_")
            assert all(t["has_answer"] is False for t in turns)
            source = sid.replace("filler", "answer")
            assert source not in own[qid]
    # q4 and q4_abs hold one content: neither gets the other's as filler
    assert "filler_d_abs" not in made["q4"]["haystack_session_ids"]
    assert "filler_d" not in made["q4_abs"]["haystack_session_ids"]
    # the pool counts that content once: filler_d or filler_d_abs, never both (the first copy)
    every = {s for q in made.values() for s in q["haystack_session_ids"]}
    assert "filler_d_abs" not in every


def test_counts_dates_and_order(oracle: list[dict[str, Any]]) -> None:
    """Up to N sessions per question, sorted by date, each filler with its own date."""
    made = {q["question_id"]: q for q in build_haystacks(oracle, sessions=3, seed=0)}
    assert [len(q["haystack_session_ids"]) for q in made.values()] == [3, 3, 3, 3, 3]
    # q1 has 2 evidence sessions: 1 filler; with 1 session per question it keeps both
    one = {q["question_id"]: q for q in build_haystacks(oracle, sessions=1, seed=0)}
    assert one["q1"]["haystack_session_ids"] == ["answer_a_2", "answer_a_1"]  # by date
    assert one["q2"]["haystack_session_ids"] == ["answer_b"]
    date_of = {
        "filler_a_1": "2023/03/01",
        "filler_a_2": "2023/01/01",
        "filler_b": "2023/02/01",
        "filler_c": "2023/04/01",
        "filler_d": "2023/05/01",
    }
    for q in made.values():
        dates = q["haystack_dates"]
        assert dates == sorted(dates)
        for sid, d in zip(q["haystack_session_ids"], dates, strict=True):
            if sid in date_of:
                assert d.startswith(date_of[sid])
    # all five others are drawn at 10 (q1: 4 candidates, q4 and q4_abs: 4 each)
    big = {q["question_id"]: q for q in build_haystacks(oracle, sessions=10, seed=0)}
    assert sorted(big["q1"]["haystack_session_ids"]) == [
        "answer_a_1",
        "answer_a_2",
        "filler_b",
        "filler_c",
        "filler_d",
    ]
    assert len(big["q4_abs"]["haystack_session_ids"]) == 1 + 4


def test_deterministic_and_nested(oracle: list[dict[str, Any]]) -> None:
    """The same seed gives the same file; the filler at N is part of the filler at N + 1."""
    a = build_haystacks(oracle, sessions=3, seed=0)
    assert a == build_haystacks(oracle, sessions=3, seed=0)
    seeds = {
        tuple(q["haystack_session_ids"])
        for s in range(20)
        for q in build_haystacks(oracle, sessions=2, seed=s)
        if q["question_id"] == "q2"
    }
    assert len(seeds) > 1  # the seed matters
    small = build_haystacks(oracle, sessions=2, seed=3)
    large = build_haystacks(oracle, sessions=4, seed=3)
    for s, big in zip(small, large, strict=True):
        assert set(s["haystack_session_ids"]) <= set(big["haystack_session_ids"])


def test_refuses_bad_sessions(oracle: list[dict[str, Any]]) -> None:
    """``sessions`` below one is refused."""
    with pytest.raises(ValueError, match="positive integer"):
        build_haystacks(oracle, sessions=0)


def test_cli_writes_a_file_the_loader_reads(oracle: list[dict[str, Any]], tmp_path: Path) -> None:
    """The command writes a LongMemEval file that convlab's loader reads, filler not gold."""
    src = tmp_path / "oracle.json"
    src.write_bytes(orjson.dumps(oracle))
    out = tmp_path / "hay.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "eval.lme_haystacks",
            "--oracle",
            str(src),
            "--sessions",
            "3",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    data = load_labelled(out, strict=True)
    assert data.cleaning["questions"] == 5
    assert data.cleaning["session_copies"] == 15
    assert data.haystacks is not None
    assert data.haystacks.height == 15
    relevant = dict(
        zip(data.queries["query_id"].to_list(), data.queries["relevant"].to_list(), strict=True)
    )
    assert all(
        r and all(t.startswith("answer_") for t in r)
        for q, r in relevant.items()
        if not q.endswith("_abs")
    )
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "eval.lme_haystacks",
            "--oracle",
            str(tmp_path / "none.json"),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.startswith("eval.lme_haystacks: ")
