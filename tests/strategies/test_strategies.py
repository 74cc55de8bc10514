"""Every strategy's units for a hand-written conversation, worked out by hand.

The conversation (chunk: turn, role, S-index, tokens):
  turn 0: SYS system s0 5 | U0 user s0 10 | U1 user s1 20 | A0 asst s0 30 | A1 asst s1 40 |
          A2 asst s2 50
  turn 1: V0 user s0 15 | B0 asst s0 25 | B1 asst s1 35
  turn 2: W0 user s0 12 (incomplete: no assistant part)
A unit's n_tokens = its chunks' tokens + 2 ([CLS], [SEP]).
"""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convlab import schema
from convlab.pipeline.units import units
from convlab.strategies import STRATEGIES, get_strategy, register_strategy
from tests.helpers import chunks_frame

ROWS = [
    (0, 0, "system", 0, 0, "SYS", 5),
    (0, 1, "user", 0, 0, "U0", 10),
    (0, 1, "user", 1, 1, "U1", 20),
    (0, 2, "assistant", 0, 0, "A0", 30),
    (0, 2, "assistant", 1, 1, "A1", 40),
    (0, 2, "assistant", 2, 2, "A2", 50),
    (1, 3, "user", 0, 0, "V0", 15),
    (1, 4, "assistant", 0, 0, "B0", 25),
    (1, 4, "assistant", 1, 1, "B1", 35),
    (2, 5, "user", 0, 0, "W0", 12),
]
SENTS = chunks_frame(ROWS)


def texts(u: pl.DataFrame) -> dict[str, tuple[str, int]]:
    return {t: (x, n) for t, x, n in u.select("target_chunk_id", "text", "n_tokens").iter_rows()}


def test_isolated() -> None:
    u = units(SENTS, "isolated")
    assert u.height == 10
    assert u["text"].to_list() == [r[5] for r in ROWS]
    assert u["n_tokens"].to_list() == [r[6] + 2 for r in ROWS]
    assert u["doc_ids"].to_list()[0] == ["c:t0"]
    assert u.schema == pl.Schema(schema.UNITS)


def test_turn_pair_by_hand() -> None:
    got = texts(units(SENTS, "turn_pair"))
    assert got == {
        "c:t0:system:s0": ("SYS", 7),  # system: alone
        "c:t0:user:s0": ("U0 A0", 42),  # user S0 target: + assistant S0 only
        "c:t0:user:s1": ("U0 U1 A0", 62),  # own S0 + target + paired S0
        "c:t0:assistant:s0": ("U0 A0", 42),  # assistant S0 target: + user S0 only
        "c:t0:assistant:s1": ("U0 A0 A1", 82),
        "c:t0:assistant:s2": ("U0 A0 A2", 92),
        "c:t1:user:s0": ("V0 B0", 42),
        "c:t1:assistant:s0": ("V0 B0", 42),
        "c:t1:assistant:s1": ("V0 B0 B1", 77),
        "c:t2:user:s0": ("W0", 14),  # last, incomplete turn: no forward pair
    }
    u = units(SENTS, "turn_pair")
    row = u.filter(pl.col("target_chunk_id") == "c:t0:assistant:s2")
    assert row["chunk_ids"].item().to_list() == [
        "c:t0:user:s0",
        "c:t0:assistant:s0",
        "c:t0:assistant:s2",
    ]


def test_turn_pair_max_tokens_priority() -> None:
    # max 70: A2 (50) is 52 with specials; + paired user S0 (10) = 62; + own S0 A0 (30) = 92 > 70
    got = texts(units(SENTS, "turn_pair", max_tokens=70))
    assert got["c:t0:assistant:s2"] == ("U0 A2", 62)
    # max_tokens 60, U1 (20): 22; + paired A0 (30) = 52; + own U0 (10) = 62 > 60: own S0 dropped
    got = texts(units(SENTS, "turn_pair", max_tokens=60))
    assert got["c:t0:user:s1"] == ("U1 A0", 52)


def test_sequential_by_hand() -> None:
    got = texts(units(SENTS, "sequential"))
    assert got["c:t0:system:s0"] == ("SYS U0", 17)  # first chunk: no N-1
    assert got["c:t0:user:s1"] == ("U0 U1 A0", 62)
    assert got["c:t2:user:s0"] == ("B1 W0", 49)  # last chunk: no N+1, N-1 crosses the turn
    # max_tokens 60, A1 (40): 42; N-1 A0 (30) -> 72 > 60 and N+1 A2 (50) too: alone
    assert texts(units(SENTS, "sequential", max_tokens=60))["c:t0:assistant:s1"] == ("A1", 42)


def test_whole_turn_by_hand() -> None:
    u = units(SENTS, "whole_turn")
    assert u["unit_id"].to_list() == [
        "whole_turn:c:t0:w0",
        "whole_turn:c:t1:w0",
        "whole_turn:c:t2:w0",
    ]
    assert u["text"].to_list() == ["SYS U0 U1 A0 A1 A2", "V0 B0 B1", "W0"]
    assert u["n_tokens"].to_list() == [157, 77, 14]
    assert u["target_chunk_id"].to_list() == [None, None, None]


def test_windows_overlap_by_hand() -> None:
    # six 10-token chunks in one turn, max_tokens 42: window 0 = c0..c3 (40 + 2); the overlap may
    # carry back 0.25 * 42 = 10.5 tokens: c3; window 1 = c3, c4, c5 (30 + 2)
    rows = [(0, 0, "user", i, i, f"c{i}", 10) for i in range(6)]
    u = units(chunks_frame(rows), "whole_turn", max_tokens=42)
    assert u["text"].to_list() == ["c0 c1 c2 c3", "c3 c4 c5"]
    assert u["n_tokens"].to_list() == [42, 32]


def test_qa_pair_by_hand() -> None:
    u = units(SENTS, "qa_pair")
    got = {(r[0], r[1]): r[2] for r in u.select("turn_index", "side", "text").iter_rows()}
    assert got == {
        (0, "question"): "U0 U1",
        (0, "answer"): "SYS A0 A1 A2",
        (1, "question"): "V0",
        (1, "answer"): "B0 B1",
        (2, "question"): "W0",
    }


def test_message_strategy() -> None:
    u = units(SENTS, "message")
    assert u["text"].to_list() == ["SYS", "U0 U1", "A0 A1 A2", "V0", "B0 B1", "W0"]


def test_dialog_pairs_and_docs() -> None:
    rows = [
        (0, 0, "user", 0, 0, "Ann: Hi.", 4),
        (0, 1, "assistant", 0, 0, "Bo: Hey.", 4),
        (0, 2, "assistant", 1, 0, "Bo: Again.", 4),
        (0, 2, "assistant", 2, 1, "More.", 2),
    ]
    s = chunks_frame(rows, doc_kind="message")
    u = units(s, "turn_pair")
    got = dict(u.select("target_chunk_id", "text").iter_rows())
    assert got["c:t0:user:s0"] == "Ann: Hi. Bo: Hey."  # first of the session: paired forward
    assert got["c:t0:assistant:s0"] == "Ann: Hi. Bo: Hey."  # answers the previous utterance
    assert (
        got["c:t0:assistant:s2"] == "Bo: Again. More."
    )  # previous is the same speaker: own S0 only
    assert u["doc_ids"].to_list()[0] == ["c:m0"]
    w = units(s, "whole_turn")
    assert w["doc_ids"].item().to_list() == ["c:m0", "c:m1", "c:m2"]


def test_registry_errors() -> None:
    with pytest.raises(
        ValueError, match="unknown strategy 'nope'; valid: isolated, isolated_window, late512_"
    ):
        get_strategy("nope")
    with pytest.raises(ValueError, match="registered twice"):

        @register_strategy
        class Again:
            name = "isolated"

    plain = {
        "isolated",
        "message",
        "turn_pair",
        "sequential",
        "whole_turn",
        "qa_pair",
        "isolated_window",
        "sequential_window",
        "turn_pair_window",
    }
    late = {f"{prefix}_{name}" for prefix in ("late", "late512") for name in plain}
    assert set(STRATEGIES) == plain | late


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["user", "assistant"]), st.integers(1, 254)),
        min_size=1,
        max_size=30,
    ),
    st.integers(40, 256),
)
def test_units_never_exceed_max_tokens(chunks: list[tuple[str, int]], max_tokens: int) -> None:
    rows = []
    turn, last_role, counts = 0, None, {"user": 0, "assistant": 0}
    for i, (role, n) in enumerate(chunks):
        if role == "user" and last_role == "assistant":
            turn, counts = turn + 1, {"user": 0, "assistant": 0}
        rows.append((turn, i, role, counts[role], 0, f"t{i}", min(n, max_tokens - 2)))
        counts[role] += 1
        last_role = role
    s = chunks_frame(rows)
    for name in STRATEGIES:
        u = units(s, name, max_tokens=max_tokens)
        assert (u["n_tokens"] <= max_tokens).all()
        ids = set(s["chunk_id"])
        assert all(set(c) <= ids for c in u["chunk_ids"].to_list())
