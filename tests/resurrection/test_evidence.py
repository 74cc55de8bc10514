"""Coverage of the evidence itself where the labels name it finer than the docs (issue 23, point 5).

LongMemEval marks ``has_answer`` messages; under convlab's protocol its docs are turns (a user
message and its reply). Coverage used to ask for every chunk of the evidence turn, so a
``message`` unit -- one message, half a turn -- could never cover one: ``message + unit`` scored
0.000 coverage on the oracle at every budget. The chat ``c`` below (chunk tokens in brackets)::

    turn 0  m0 user       Q (10)
            m1 assistant  R0 (30)  R1 (50)  R2 (20)
    turn 1  m2 user       Q2 (15)
            m3 assistant  S0 (25)
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from convlab import schema
from convlab.evaluation.datasets import load_labelled
from convlab.model import MAX_TOKENS
from convlab.pipeline.policy import ContentPolicy
from convlab.resurrection import Shared, budget_measures, evidence_chunks
from tests.helpers import chunks_frame

CHAT = chunks_frame(
    [
        (0, 0, "user", 0, 0, "Q", 10),
        (0, 1, "assistant", 0, 0, "R0", 30),
        (0, 1, "assistant", 1, 1, "R1", 50),
        (0, 1, "assistant", 2, 2, "R2", 20),
        (1, 2, "user", 0, 0, "Q2", 15),
        (1, 3, "assistant", 0, 0, "S0", 25),
    ],
    cid="c",
)
ID = dict(zip(CHAT["text"], CHAT["chunk_id"], strict=True))
UNITS = schema.frame(
    [
        {
            "unit_id": "msg:c:m0",
            "conversation_id": "c",
            "chunk_ids": [ID["Q"]],
            "target_chunk_id": ID["Q"],
            "doc_ids": ["c:t0"],
        }
    ],
    schema.UNITS,
)
HITS = pl.DataFrame({"query_id": ["q"], "rank": [1], "unit_id": ["msg:c:m0"]})
FIXTURE = Path(__file__).parent.parent / "fixtures" / "longmemeval" / "longmemeval_fixture.json"


def _queries(evidence: list[str] | None) -> pl.DataFrame:
    q = schema.frame(
        [{"query_id": "q", "text": "x", "relevant": ["c:t0"], "answer": "q"}], schema.QUERIES
    )
    if evidence is None:
        return q
    return q.with_columns(pl.Series("evidence", [evidence], dtype=pl.List(pl.String)))


def _row(evidence: list[str] | None, budget: int = 100) -> dict[str, object]:
    m = budget_measures(
        HITS, _queries(evidence), units=UNITS, chunks=CHAT, budgets=[budget], policy="unit"
    )
    return m.row(0, named=True)


def test_a_message_unit_covers_its_evidence_message_not_the_whole_turn() -> None:
    # without evidence: the turn is Q R0 R1 R2 (110 tokens), the unit brings back Q alone
    assert _row(None)["coverage"] == 0.0
    assert _row(None)["evidence_token_recall"] == pytest.approx(10 / 110)
    # the evidence is the user message m0 (Q, 10 tokens): covered whole
    assert _row(["c:m0"])["coverage"] == 1.0
    assert _row(["c:m0"])["evidence_token_recall"] == 1.0
    assert _row(["c:m0"], budget=9)["coverage"] == 0.0  # Q does not fit 9 tokens
    # the evidence is the reply m1 (R0 R1 R2): Q alone does not cover it
    assert _row(["c:m1"])["coverage"] == 0.0
    assert _row(["c:m1"])["evidence_token_recall"] == 0.0


def test_evidence_outside_the_relevant_docs_leaves_them_whole() -> None:
    memo = Shared.of(UNITS, CHAT)
    whole = {ID[t] for t in ("Q", "R0", "R1", "R2")}
    assert evidence_chunks(["c:t0"], None, memo) == [whole]
    assert evidence_chunks(["c:t0"], ["c:m2"], memo) == [whole]  # m2 lies in turn 1
    assert evidence_chunks(["c:t0", "c:t1"], ["c:m1", "c:m2"], memo) == [
        {ID["R0"], ID["R1"], ID["R2"]},
        {ID["Q2"]},
    ]
    assert evidence_chunks(["c:t9"], ["c:m0"], memo) == [set()]  # a doc without chunks


def test_longmemeval_queries_carry_their_has_answer_messages_and_message_units_cover_them() -> None:
    from convlab.pipeline.chunks import chunks as make_chunks
    from convlab.pipeline.units import units as make_units

    data = load_labelled(FIXTURE, strict=True)
    rows = data.queries.select("query_id", "relevant", "evidence").rows()
    assert [(q, list(r), list(e)) for q, r, e in rows] == [
        ("q1", ["answer_1a:t0"], ["answer_1a:m0"]),
        ("q2", ["answer_2a:t0", "answer_2b:t0"], ["answer_2a:m0", "answer_2b:m0"]),
        ("q3_abs", [], []),
    ]
    chunks = make_chunks(data.corpus, ContentPolicy())
    units = make_units(chunks, "message", MAX_TOKENS)
    # the message unit of q1's evidence message (the first user message of answer_1a)
    evidence = units.filter(pl.col("chunk_ids").list.first().str.starts_with("answer_1a:t0:user"))
    hits = pl.DataFrame({"query_id": ["q1"], "rank": [1], "unit_id": [evidence["unit_id"][0]]})
    measured = budget_measures(
        hits,
        data.queries.filter(pl.col("query_id") == "q1"),
        units=units,
        chunks=chunks,
        budgets=[1024],
        policy="unit",
    )
    assert measured["coverage"].to_list() == [1.0]
    turn_only = data.queries.filter(pl.col("query_id") == "q1").drop("evidence")
    before = budget_measures(
        hits, turn_only, units=units, chunks=chunks, budgets=[1024], policy="unit"
    )
    assert before["coverage"].to_list() == [0.0]  # the reply is half the turn
