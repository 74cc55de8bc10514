"""The bounded strategies (``*_window``) on chunk lists worked out by hand.

A chat of two turns (chunk: message, role, tokens); the windows hold at most half of
``max_tokens`` ([CLS] and [SEP] counted):
  turn 0: m0 user U0 10, U1 10 | m1 assistant A0 20, A1 20, A2 20, A3 20, A4 20
  turn 1: m2 user V0 8 | m3 assistant B0 30 (a reply of one sentence)
At max_tokens 100 (windows of 50): m0 -> [U0 U1] (22); m1 -> [A0 A1] (42), [A2 A3] (42),
[A4] (22) since a third 20 would make 62; m2 -> [V0] (10); m3 -> [B0] (32).
"""

from __future__ import annotations

import polars as pl
import pytest

from convlab.pipeline.units import units
from convlab.resurrection import resurrect
from tests.helpers import chunks_frame

ROWS = [
    (0, 0, "user", 0, 0, "U0", 10),
    (0, 0, "user", 1, 1, "U1", 10),
    *[(0, 1, "assistant", i, i, f"A{i}", 20) for i in range(5)],
    (1, 2, "user", 0, 0, "V0", 8),
    (1, 3, "assistant", 0, 0, "B0", 30),
]
CHAT = chunks_frame(ROWS)
TARGETS = [
    "c:t0:user:s0",
    "c:t0:assistant:s0",
    "c:t0:assistant:s2",
    "c:t0:assistant:s4",
    "c:t1:user:s0",
    "c:t1:assistant:s0",
]


def cols(u: pl.DataFrame, *names: str) -> list[tuple[object, ...]]:
    return list(u.select(*names).iter_rows())


def test_isolated_window_by_hand() -> None:
    u = units(CHAT, "isolated_window", max_tokens=100)
    assert cols(u, "text", "n_tokens") == [
        ("U0 U1", 22),
        ("A0 A1", 42),
        ("A2 A3", 42),
        ("A4", 22),
        ("V0", 10),
        ("B0", 32),
    ]
    assert u["target_chunk_id"].to_list() == TARGETS
    assert u["unit_id"].to_list() == [f"isolated_window:{t}" for t in TARGETS]
    assert u["doc_ids"].to_list() == [["c:t0"]] * 4 + [["c:t1"]] * 2
    assert u["chunk_ids"].to_list()[2] == ["c:t0:assistant:s2", "c:t0:assistant:s3"]
    assert u["role"].to_list() == ["user", *["assistant"] * 3, "user", "assistant"]


def test_sequential_window_by_hand() -> None:
    u = units(CHAT, "sequential_window", max_tokens=100)
    assert cols(u, "target_chunk_id", "text", "n_tokens") == [
        (TARGETS[0], "U0 U1 A0", 42),  # first window: no N-1
        (TARGETS[1], "U1 A0 A1 A2", 72),  # N-1 of its first chunk, N+1 of its last
        (TARGETS[2], "A1 A2 A3 A4", 82),
        (TARGETS[3], "A3 A4 V0", 50),  # N+1 crosses into the next turn
        (TARGETS[4], "A4 V0 B0", 60),
        (TARGETS[5], "V0 B0", 40),  # last chunk: no N+1
    ]
    assert u["doc_ids"].to_list()[3] == ["c:t0"]  # the window's doc, not the neighbour's


def test_turn_pair_window_by_hand() -> None:
    u = units(CHAT, "turn_pair_window", max_tokens=100)
    assert cols(u, "target_chunk_id", "text", "n_tokens") == [
        (TARGETS[0], "U0 U1 A0", 42),  # user window: own S0 U0 held already, + assistant S0
        (TARGETS[1], "U0 A0 A1", 52),  # holds its own S0 A0: + the user S0 only
        (TARGETS[2], "U0 A0 A2 A3", 72),  # paired user S0 + own S0 + the window
        (TARGETS[3], "U0 A0 A4", 52),
        (TARGETS[4], "V0 B0", 40),
        (TARGETS[5], "V0 B0", 40),
    ]


@pytest.mark.parametrize(
    ("bounded", "original"), [("isolated_window", "isolated"), ("turn_pair_window", "turn_pair")]
)
def test_a_reply_of_one_sentence_is_the_original_unit(bounded: str, original: str) -> None:
    fields = ["text", "n_tokens", "chunk_ids", "target_chunk_id", "doc_ids", "role"]
    mine = units(CHAT, bounded, max_tokens=100).filter(pl.col("target_chunk_id") == TARGETS[5])
    theirs = units(CHAT, original, max_tokens=100).filter(pl.col("target_chunk_id") == TARGETS[5])
    assert mine.select(fields).to_dicts() == theirs.select(fields).to_dicts()
    assert mine["unit_id"].item() == f"{bounded}:{TARGETS[5]}"


# A very long reply at the default limit of 256 (windows of 128): Q0 user 120 | A0..A5 20 each,
# A6 254 (the largest chunk there can be), A7..A13 20 each. Windows: [Q0] 122; [A0..A5] 122
# (a seventh 20 would make 142); [A6] 256, alone; [A7..A12] 122; [A13] 22.
LONG = chunks_frame(
    [
        (0, 0, "user", 0, 0, "Q0", 120),
        *[(0, 1, "assistant", i, i, f"A{i}", 254 if i == 6 else 20) for i in range(14)],
    ]
)


def test_a_very_long_reply_stays_within_256_tokens() -> None:
    a = " ".join(f"A{i}" for i in range(6))
    b = " ".join(f"A{i}" for i in range(7, 13))
    expected = {
        "isolated_window": [("Q0", 122), (a, 122), ("A6", 256), (b, 122), ("A13", 22)],
        "sequential_window": [
            ("Q0 A0", 142),
            (f"Q0 {a}", 242),  # N+1 A6 (254) does not fit
            ("A6", 256),  # nothing fits beside it
            (f"{b} A13", 142),  # N-1 A6 does not fit, N+1 does
            ("A12 A13", 42),
        ],
        "turn_pair_window": [
            ("Q0 A0", 142),
            (f"Q0 {a}", 242),
            ("A6", 256),
            (f"Q0 {b}", 242),  # the paired S0 Q0 first; own S0 A0 would make 262
            ("Q0 A0 A13", 162),
        ],
    }
    for name, rows in expected.items():
        u = units(LONG, name)
        assert cols(u, "text", "n_tokens") == rows, name
        assert u["n_tokens"].max() == 256
    assert units(LONG, "isolated").height == 15


def test_four_times_fewer_units_on_a_long_reply() -> None:
    # 30 sentences of 16 tokens (a LongMemEval reply's mean): 7 make 114 of 128, 8 would make
    # 130, so windows of 7, 7, 7, 7, 2: 5 units instead of 30
    reply = chunks_frame([(0, 0, "assistant", i, i, f"S{i}", 16) for i in range(30)])
    for bounded, original in [
        ("isolated_window", "isolated"),
        ("sequential_window", "sequential"),
        ("turn_pair_window", "turn_pair"),
    ]:
        assert units(reply, bounded).height == 5
        assert units(reply, original).height == 30


# A dialog (docs are messages): m0 Ann 4 | m1 Bo: B0 60, B1 60, B2 60 | m2 Ann 4, one session.
# Windows of 128: m1 -> [B0 B1] (122), [B2] (62).
DIALOG = chunks_frame(
    [
        (0, 0, "user", 0, 0, "Ann: Hi.", 4),
        (0, 1, "assistant", 0, 0, "Bo: B0.", 60),
        (0, 1, "assistant", 1, 1, "B1.", 60),
        (0, 1, "assistant", 2, 2, "B2.", 60),
        (1, 2, "user", 0, 0, "Ann: Ok.", 4),
    ],
    doc_kind="message",
)
B2 = "turn_pair_window:c:t0:assistant:s2"


def test_turn_pair_window_in_a_dialog_pairs_utterances() -> None:
    u = units(DIALOG, "turn_pair_window")
    assert cols(u, "unit_id", "text", "n_tokens", "doc_ids") == [
        ("turn_pair_window:c:t0:user:s0", "Ann: Hi. Bo: B0.", 66, ["c:m0"]),  # paired forward
        ("turn_pair_window:c:t0:assistant:s0", "Ann: Hi. Bo: B0. B1.", 126, ["c:m1"]),
        (B2, "Ann: Hi. Bo: B0. B2.", 126, ["c:m1"]),  # its pair's S0, then its own S0
        ("turn_pair_window:c:t1:user:s0", "Bo: B0. Ann: Ok.", 66, ["c:m2"]),
    ]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("unit", ["Ann: Hi.", "Bo: B0.", "B2."]),  # exactly what was embedded
        ("doc", ["Bo: B0.", "B1.", "B2."]),  # the window's message, whole
        ("pair", ["Ann: Hi.", "Bo: B0.", "B1.", "B2."]),  # the message and the one it answers
        ("window", ["Ann: Hi.", "Bo: B0.", "B1.", "B2.", "Ann: Ok."]),  # one message each side
    ],
)
def test_resurrection_policies_bring_back_a_window_unit(policy: str, expected: list[str]) -> None:
    u = units(DIALOG, "turn_pair_window")
    r = resurrect([B2], 1000, units=u, chunks=DIALOG, policy=policy)
    assert r.context["text"].to_list() == expected
    assert r.hits_used == [1]
    targets = r.context.filter(pl.col("is_target"))["text"].to_list()
    assert targets == ["B2."]  # the window's first chunk is the unit's target
