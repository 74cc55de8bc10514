"""``windows_per``: what ``whole_turn`` and ``message`` share, on chunks worked out by hand."""

from __future__ import annotations

import pytest

from convlab.strategies.base import Chunk, windows_per


def chunk(turn: int, message: int, role: str, text: str, n_tokens: int) -> Chunk:
    return Chunk(
        chunk_id=f"c:m{message}:{text}",
        conversation_id="c",
        turn_index=turn,
        message_index=message,
        role=role,
        sentence_index=0,
        sentence_in_message=0,
        position=0,
        timestamp=None,
        text=text,
        n_tokens=n_tokens,
        doc_kind="turn",
    )


# turn 0: a user message (10 tokens) and an assistant message (20 + 30); turn 1: a user message (5)
CHUNKS = [
    chunk(0, 0, "user", "U", 10),
    chunk(0, 1, "assistant", "A0", 20),
    chunk(0, 1, "assistant", "A1", 30),
    chunk(1, 2, "user", "V", 5),
]


def test_per_turn_one_unit_a_turn_without_target() -> None:
    units = windows_per("s", CHUNKS, 256, level="turn", with_target=False)
    assert [u["unit_id"] for u in units] == ["s:c:t0:w0", "s:c:t1:w0"]
    assert [u["text"] for u in units] == ["U A0 A1", "V"]
    assert [u["n_tokens"] for u in units] == [10 + 20 + 30 + 2, 5 + 2]
    assert [u["target_chunk_id"] for u in units] == [None, None]


def test_per_message_one_unit_a_message_with_its_first_chunk_as_target() -> None:
    units = windows_per("s", CHUNKS, 256, level="message", with_target=True)
    assert [u["unit_id"] for u in units] == ["s:c:m0:w0", "s:c:m1:w0", "s:c:m2:w0"]
    assert [u["text"] for u in units] == ["U", "A0 A1", "V"]
    assert [u["target_chunk_id"] for u in units] == ["c:m0:U", "c:m1:A0", "c:m2:V"]


def test_a_group_over_the_budget_becomes_windows() -> None:
    # budget 40: U + A0 = 30 + 2 fits, A1 (30) does not -> a second window of turn 0; the
    # overlap may carry 25% of 40 = 10 tokens over, and A0 (20) is more, so w1 is A1 alone
    units = windows_per("s", CHUNKS[:3], 40, level="turn", with_target=False)
    assert [u["unit_id"] for u in units] == ["s:c:t0:w0", "s:c:t0:w1"]
    assert [(u["text"], u["n_tokens"]) for u in units] == [("U A0", 32), ("A1", 32)]


def test_unknown_level_is_refused_naming_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="unknown window level 'sentence'; valid: turn, message"):
        windows_per("s", CHUNKS, 256, level="sentence", with_target=False)
