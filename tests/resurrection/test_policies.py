"""Resurrection policies, worked by hand: which chunks come back, in which order, at what cost.

Two tiny conversations. ``d`` is a dialog whose docs are messages (chunk tokens in brackets)::

    turn 0  m0 user       A1 (10)  A2 (20)
            m1 assistant  B1 (30)
    turn 1  m2 user       C1 (40)
            m3 user       C2 (45)
            m4 assistant  D1 (50)  D2 (60)
    turn 2  m5 user       E1 (70)

``c`` is a chat whose docs are turns: turn 0 = Q (10), R0 (30), R1 (50), R2 (20); turn 1 = Q2
(15), S0 (25).
"""

from __future__ import annotations

import polars as pl
import pytest

from convlab import schema
from convlab.protocols import Layout
from convlab.resurrection import (
    POLICIES,
    budget_measures,
    get_policy,
    resurrect,
    walk,
)
from convlab.resurrection.pair import paired_doc
from convlab.resurrection.window import WindowPolicy
from tests.helpers import chunks_frame

DIALOG = chunks_frame(
    [
        (0, 0, "user", 0, 0, "A1", 10),
        (0, 0, "user", 1, 1, "A2", 20),
        (0, 1, "assistant", 0, 0, "B1", 30),
        (1, 2, "user", 0, 0, "C1", 40),
        (1, 3, "user", 1, 0, "C2", 45),
        (1, 4, "assistant", 0, 0, "D1", 50),
        (1, 4, "assistant", 1, 1, "D2", 60),
        (2, 5, "user", 0, 0, "E1", 70),
    ],
    doc_kind="message",
    cid="d",
)
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
CHUNKS = pl.concat([DIALOG, CHAT])
ID = dict(zip(CHUNKS["text"], CHUNKS["chunk_id"], strict=True))  # "A1" -> "d:t0:user:s0"


def unit(uid: str, texts: list[str], target: str | None, docs: list[str]) -> dict[str, object]:
    return {
        "unit_id": uid,
        "conversation_id": uid.split(":")[1],
        "chunk_ids": [ID[t] for t in texts],
        "target_chunk_id": None if target is None else ID[target],
        "doc_ids": docs,
    }


UNITS = schema.frame(
    [
        unit("tp:d:D2", ["C1", "D1", "D2"], "D2", ["d:m4"]),  # 150
        unit("tp:d:A2", ["A1", "A2", "B1"], "A2", ["d:m0"]),  # 60
        unit("tp:d:A1", ["A1", "B1"], "A1", ["d:m0"]),  # 40
        unit("tp:d:C2", ["C1", "C2", "D1"], "C2", ["d:m3"]),  # 135
        unit("tp:d:E1", ["E1"], "E1", ["d:m5"]),  # 70
        unit("win:d:w0", ["B1", "C1"], None, ["d:m1", "d:m2"]),  # a window of two docs
        unit("tp:c:R2", ["Q", "R0", "R2"], "R2", ["c:t0"]),  # 60
        unit("seq:c:Q", ["Q", "R0"], "Q", ["c:t0"]),  # 40
    ],
    schema.UNITS,
)


def texts(res_context: pl.DataFrame) -> list[str]:
    return res_context["text"].to_list()


def run(ids: list[str], budget: int, policy: object) -> tuple[list[str], int]:
    r = resurrect(ids, budget, units=UNITS, chunks=CHUNKS, policy=policy)  # type: ignore[arg-type]
    return texts(r.context), r.tokens_used


def test_registry_holds_the_five_policies_and_refuses_unknown_names() -> None:
    assert POLICIES.names() == ("adaptive", "doc", "pair", "unit", "unit+doc", "window")
    assert {name: get_policy(name).name for name in POLICIES.names()} == {
        n: n for n in POLICIES.names()
    }
    with pytest.raises(ValueError, match=r"policy 'turn'; valid: adaptive, doc, pair"):
        get_policy("turn")
    with pytest.raises(ValueError, match="not a resurrection policy"):
        get_policy(42)  # type: ignore[arg-type]


def test_unit_brings_back_what_was_embedded() -> None:
    assert run(["tp:d:D2"], 1000, "unit") == (["C1", "D1", "D2"], 40 + 50 + 60)


def test_doc_brings_back_the_message_in_a_dialog_and_the_turn_in_a_chat() -> None:
    # the unit holds C1 (another message): the doc policy leaves it out
    assert run(["tp:d:D2"], 1000, "doc") == (["D1", "D2"], 110)
    assert run(["tp:d:A1"], 1000, "doc") == (["A1", "A2"], 30)
    assert run(["tp:c:R2"], 1000, "doc") == (["Q", "R0", "R1", "R2"], 110)
    # a unit of two docs, no doc named: both
    assert run(["win:d:w0"], 1000, "doc") == (["B1", "C1"], 70)


def test_window_takes_n_docs_on_each_side_cut_at_the_ends() -> None:
    assert run(["tp:d:D2"], 1000, "window") == (["C2", "D1", "D2", "E1"], 45 + 110 + 70)
    assert run(["tp:d:A2"], 1000, "window") == (["A1", "A2", "B1"], 60)
    assert run(["tp:d:E1"], 1000, WindowPolicy(n=2)) == (["C2", "D1", "D2", "E1"], 225)
    assert run(["tp:d:D2"], 1000, WindowPolicy(n=0)) == run(["tp:d:D2"], 1000, "doc")
    assert run(["tp:c:R2"], 1000, "window") == (["Q", "R0", "R1", "R2", "Q2", "S0"], 150)
    with pytest.raises(ValueError, match="window n must be an int >= 0"):
        WindowPolicy(n=-1)


def test_paired_doc_by_hand() -> None:
    layout = Layout.of(UNITS, CHUNKS)
    got = {f"d:m{i}": paired_doc(f"d:m{i}", layout) for i in range(6)}
    assert got == {
        "d:m0": "d:m1",  # a question: its answer in the turn
        "d:m1": "d:m0",  # an answer: its question
        "d:m2": "d:m4",  # the first of two user messages: the turn's first answer
        "d:m3": "d:m4",
        "d:m4": "d:m3",  # an answer: the last question before it
        "d:m5": "d:m4",  # unanswered: the answer it replies to, in the previous turn
    }
    assert paired_doc("c:t0", layout) is None  # a turn holds its own pair
    # a preamble answer (before the first question of turn 0) has no pair
    preamble = chunks_frame(
        [
            (0, 0, "assistant", 0, 0, "P", 5),
            (0, 1, "user", 0, 0, "U", 6),
            (0, 2, "assistant", 1, 0, "V", 7),
        ],
        doc_kind="message",
        cid="p",
    )
    lp = Layout.of(UNITS.clear(), preamble)
    assert [paired_doc(f"p:m{i}", lp) for i in range(3)] == [None, "p:m2", "p:m1"]


def test_pair_brings_back_the_doc_and_its_pair_in_conversation_order() -> None:
    assert run(["tp:d:A1"], 1000, "pair") == (["A1", "A2", "B1"], 60)
    assert run(["tp:d:D2"], 1000, "pair") == (["C2", "D1", "D2"], 155)
    assert run(["tp:d:E1"], 1000, "pair") == (["D1", "D2", "E1"], 180)
    assert run(["tp:c:R2"], 1000, "pair") == run(["tp:c:R2"], 1000, "doc")


def test_unit_doc_grows_the_unit_chunk_by_chunk_while_the_budget_allows() -> None:
    # unit Q+R0 (40) first, then R1 (50: 90 > 70, left out), then R2 (20: 60 fits)
    r = resurrect(["seq:c:Q"], 70, units=UNITS, chunks=CHUNKS, policy="unit+doc")
    assert (texts(r.context), r.tokens_used, r.pieces_skipped) == (["Q", "R0", "R2"], 60, 1)
    assert run(["seq:c:Q"], 1000, "unit+doc") == (["Q", "R0", "R1", "R2"], 110)
    # the unit itself does not fit: the hit is skipped, whatever its doc would cost
    r = resurrect(["seq:c:Q"], 39, units=UNITS, chunks=CHUNKS, policy="unit+doc")
    assert (r.tokens_used, r.hits_skipped) == (0, [1])
    # a unit holding chunks of other docs keeps them: C1 stays, the doc adds nothing
    assert run(["tp:d:D2"], 1000, "unit+doc") == (["C1", "D1", "D2"], 150)


def test_chunks_brought_back_twice_are_counted_once() -> None:
    # window of m4 = C2 D1 D2 E1 (225); window of m3 = C1 C2 D1 D2: only C1 (40) is new
    r = resurrect(["tp:d:D2", "tp:d:C2"], 1000, units=UNITS, chunks=CHUNKS, policy="window")
    assert r.tokens_used == 225 + 40
    assert r.tokens_offered == 225 + (40 + 45 + 110)
    assert r.redundancy == pytest.approx(1 - 265 / 420)
    assert r.context["hit_rank"].to_list() == [2, 1, 1, 1, 1]  # C1 came with hit 2
    assert r.context["is_target"].to_list() == [False, True, False, True, False]


def test_the_budget_edge_is_the_same_rule_for_every_policy() -> None:
    # doc of D2 costs 110: it fits 110 exactly; at 109 it is skipped and the next hit (30) fits
    assert run(["tp:d:D2", "tp:d:A1"], 110, "doc")[1] == 110
    r = resurrect(["tp:d:D2", "tp:d:A1"], 109, units=UNITS, chunks=CHUNKS, policy="doc")
    assert (r.tokens_used, r.hits_used, r.hits_skipped) == (30, [2], [1])
    for name in POLICIES.names():
        r = resurrect(["tp:d:E1"], 69, units=UNITS, chunks=CHUNKS, policy=name)
        assert (r.tokens_used, r.hits_skipped) == (0, [1]), name


def test_context_comes_back_in_conversation_order_with_its_hit_ranks() -> None:
    r = resurrect(["tp:d:E1", "tp:d:A1"], 1000, units=UNITS, chunks=CHUNKS, policy="doc")
    assert texts(r.context) == ["A1", "A2", "E1"]
    assert r.context["hit_rank"].to_list() == [2, 2, 1]
    assert r.policy == "doc"


def test_walk_skips_a_later_piece_alone_and_a_first_piece_with_its_hit() -> None:
    w = walk([(1, [["a"], ["b"], ["c"]]), (2, [["d"]])], 10, {"a": 4, "b": 7, "c": 6, "d": 1})
    # a (4) fits; b (7) would make 11: left out; c (6) makes 10; hit 2's d (1) would make 11
    assert (w.used, w.hits_used, w.hits_skipped, w.pieces_skipped) == (10, [1], [2], 1)
    assert list(w.alive) == ["a", "c"]
    assert w.offered == 10


def test_budget_measures_per_policy_and_named_doc_of_a_many_doc_unit() -> None:
    queries = schema.frame(
        [{"query_id": "q", "text": "x", "relevant": ["d:m2"], "answer": "c1"}], schema.QUERIES
    )
    hits = pl.DataFrame(
        {"query_id": ["q"], "rank": [1], "unit_id": ["win:d:w0"], "doc_id": ["d:m2"]}
    )

    def row(policy: str, budget: int) -> dict[str, object]:
        m = budget_measures(
            hits, queries, units=UNITS, chunks=CHUNKS, budgets=[budget], policy=policy
        )
        return m.row(0, named=True)

    # the hit stands for m2: doc brings C1 alone (40), unit brings B1 + C1 (70)
    assert row("doc", 40)["tokens_used"] == 40
    assert row("doc", 40)["coverage"] == 1.0
    assert row("unit", 40)["tokens_used"] == 0
    assert row("unit", 70)["coverage"] == 1.0
    # pair of m2 is m4: C1 D1 D2 = 150
    assert row("pair", 1000)["tokens_used"] == 150
    assert row("pair", 149)["answer_contained"] == 0.0
    assert row("pair", 150)["answer_contained"] == 1.0


def test_unknown_unit_names_its_rank() -> None:
    with pytest.raises(ValueError, match=r"hit 2 points to unit 'nope'"):
        resurrect(["tp:d:A1", "nope"], 100, units=UNITS, chunks=CHUNKS, policy="doc")


def test_every_policy_stays_within_budget_on_the_sample() -> None:
    """Property: on the bundled sample, every policy and budget keeps tokens_used <= budget and
    brings each chunk back once, its tokens counted once."""
    from convlab.embed import HashEmbedder
    from convlab.evaluation.datasets import sample
    from convlab.index import VectorIndex
    from convlab.pipeline.chunks import chunks
    from convlab.pipeline.units import units
    from convlab.retrieval.options import SearchOptions
    from convlab.retrieval.search import search_many

    data = sample()
    ch = chunks(data.corpus)
    emb = HashEmbedder(64)
    tokens = dict(ch.select("chunk_id", "n_tokens").iter_rows())
    checked = 0
    for strategy in ("turn_pair", "sequential"):
        u = units(ch, strategy)
        index = VectorIndex.build(u, emb.encode(u["text"].to_list()), model_id=emb.model_id)
        hits = search_many(
            index, data.queries, embedder=emb, options=SearchOptions.of(k=20), scoped=True
        )
        for q, part in hits.group_by("query_id"):
            ids = part.sort("rank")["unit_id"].to_list()
            for name in POLICIES.names():
                for budget in (0, 64, 256, 1024):
                    r = resurrect(ids, budget, units=u, chunks=ch, policy=name)
                    got = r.context["chunk_id"].to_list()
                    assert r.tokens_used <= budget, (q, name, budget)
                    assert len(got) == len(set(got)), (q, name, budget)
                    assert r.tokens_used == sum(tokens[c] for c in got), (q, name, budget)
                    assert r.tokens_offered >= r.tokens_used
                    checked += 1
        m = budget_measures(hits, data.queries, units=u, chunks=ch, budgets=[256], policy="pair")
        assert (m["tokens_used"] <= 256).all()
    assert checked > 1000
