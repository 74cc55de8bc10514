"""Late chunking's passes and its strategies, on chunk lists worked out by hand.

Windows of 16 tokens ([CLS] and [SEP] included: 14 for text), :data:`OVERLAP` 0.25 (a window
carries over at most 4 tokens of whole messages).
"""

from __future__ import annotations

from datetime import timedelta

import polars as pl
import pytest

from convlab.pipeline.units import units
from convlab.protocols import Chunk
from convlab.strategies import STRATEGIES
from convlab.strategies.late import homes, late_window, passes, plain_of
from tests.helpers import chunks_frame

NAMES = list(Chunk.__slots__)


def rows_of(frame: pl.DataFrame) -> list[Chunk]:
    return [Chunk(**r) for r in frame.select(NAMES).iter_rows(named=True)]


def messages(*sizes: int) -> pl.DataFrame:
    """One single-chunk message per size, alternating speakers, all at one time."""
    roles = ("user", "assistant")
    return chunks_frame(
        [(m // 2, m, roles[m % 2], 0, 0, f"M{m}", n) for m, n in enumerate(sizes)],
        doc_kind="message",
    )


def texts(ps: list) -> list[list[str]]:
    return [[c.text for c in p.chunks] for p in ps]


def test_whole_messages_are_packed_and_a_full_window_carries_its_last_small_messages() -> None:
    # 2 + 3*4 = 14 tokens; M4 would make 17 > 16: flush. Carry up to 4 tokens: M3 (3); M2 would
    # make 6. The next window is M3, M4 (2 + 6 = 8).
    ps = passes(rows_of(messages(3, 3, 3, 3, 3)), 16)
    assert texts(ps) == [["M0", "M1", "M2", "M3"], ["M3", "M4"]]
    assert [p.n_tokens for p in ps] == [14, 8]
    assert ps[0].spans == [(1, 4), (4, 7), (7, 10), (10, 13)]
    # M3: in pass 0 at rows 10-13 of 14 (1 token after it), in pass 1 at rows 1-4 of 8 (1
    # before): a tie, so its home is the first pass; M2's only pass is pass 0
    home = homes(ps)
    assert home["c:t1:assistant:s0"] == (0, 3)
    assert home["c:t2:user:s0"] == (1, 1)


def test_a_message_larger_than_the_carry_is_not_carried() -> None:
    ps = passes(rows_of(messages(5, 5, 5, 5)), 16)
    assert texts(ps) == [["M0", "M1"], ["M2", "M3"]]


def test_a_message_longer_than_a_window_is_cut_into_overlapping_windows_of_its_sentences() -> None:
    # one message of sentences 6, 6, 2, 6 tokens (20 > 14): windows of whole sentences
    # [S0 S1 S2] (2 + 14 = 16), then a carry of at most 4 tokens from it: S2 (2; S1 would make
    # 8) -> [S2 S3] (10); the reply R is a window of its own
    frame = chunks_frame(
        [(0, 0, "user", i, i, f"S{i}", n) for i, n in enumerate((6, 6, 2, 6))]
        + [(0, 1, "assistant", 0, 0, "R", 3)],
        doc_kind="message",
    )
    ps = passes(rows_of(frame), 16)
    assert texts(ps) == [["S0", "S1", "S2"], ["S2", "S3"], ["R"]]
    assert all(p.n_tokens <= 16 for p in ps)


def test_overlapping_windows_cover_every_token() -> None:
    sizes = [1, 7, 3, 14, 2, 2, 9, 5, 1, 1, 1, 13, 4]
    chunks = rows_of(messages(*sizes))
    for window in (16, 24, 40):
        ps = passes(chunks, window)
        covered = {c.chunk_id for p in ps for c in p.chunks}
        assert covered == {c.chunk_id for c in chunks}
        assert all(p.n_tokens <= window for p in ps)
        # the token rows of every chunk, in every pass, are exactly its n_tokens
        for p in ps:
            assert [b - a for a, b in p.spans] == [c.n_tokens for c in p.chunks]
            assert p.spans[-1][1] + 1 == p.n_tokens


def test_a_new_session_starts_a_new_window() -> None:
    frame = messages(2, 2, 2).with_columns(
        pl.when(pl.col("message_index") == 2)
        .then(pl.col("timestamp") + timedelta(days=1))
        .otherwise(pl.col("timestamp"))
        .alias("timestamp")
    )
    assert texts(passes(rows_of(frame), 64)) == [["M0", "M1"], ["M2"]]


def test_every_strategy_has_a_late_variant_of_each_window() -> None:
    plain = [n for n in STRATEGIES.names() if late_window(n) is None]
    assert len(plain) == 9
    for name in plain:
        assert late_window(f"late_{name}") == 256
        assert late_window(f"late512_{name}") == 512
        assert plain_of(f"late512_{name}") == name
    assert plain_of("message") == "message"


@pytest.mark.parametrize("name", ["sequential", "turn_pair", "message", "isolated_window"])
def test_a_late_variant_makes_its_plain_strategys_units_with_their_context(name: str) -> None:
    frame = messages(3, 3, 3, 3, 3)
    plain = units(frame, name, max_tokens=64)
    late = units(frame, f"late_{name}", max_tokens=64)
    same = ["chunk_ids", "text", "doc_ids", "target_chunk_id", "n_tokens"]
    assert late.select(same).equals(plain.select(same))
    assert late["unit_id"].to_list() == [f"late_{u}" for u in plain["unit_id"].to_list()]
    assert set(late["strategy"]) == {f"late_{name}"}
    assert plain["context_tokens"].null_count() == plain.height
    # at 256 tokens the five messages are one pass of 2 + 15 tokens
    assert set(late["context_tokens"]) == {17}
