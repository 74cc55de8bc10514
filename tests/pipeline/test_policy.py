"""Dialog text formats of the content policy (issue 13): plain, speaker, date, locomo.

Expected texts are written out by hand from the tiny dialogs below. The default's golden digests
were computed from the base commit (b076195, before ``text_format`` existed) with the same
``_digest`` over the same frames, so they pin today's chunks and units byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

import convlab
from convlab.loaders.base import CorpusBuilder
from convlab.loaders.blocks import BlockRow
from convlab.loaders.corpus import Corpus
from convlab.loaders.locomo import parse_session_time
from convlab.paths import sample_data_path
from convlab.pipeline.chunks import chunks
from convlab.pipeline.policy import TEXT_FORMATS, ContentPolicy, date_text, policy_text
from convlab.pipeline.tokens import count_tokens
from convlab.store import StoreConfig

ANN_TIME = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # "1:56 pm on 8 May, 2023"
BO_TIME = datetime(2023, 5, 9, 0, 5, 7, tzinfo=UTC)  # past midnight, with seconds


def _dialog(
    *,
    timed: bool = True,
    kind: str = "dialog",
    speakers: tuple[str | None, str | None] = ("Ann", "Bo"),
) -> Corpus:
    """Ann: "Hi there. Bye." then Bo: "Yo.", stamped (or not) with ANN_TIME and BO_TIME."""
    b = CorpusBuilder(strict=True)
    b.conversation("d", source_format="test", source_path="test", kind=kind)
    for i, (role, text, when, speaker) in enumerate(
        [
            ("user", "Hi there. Bye.", ANN_TIME, speakers[0]),
            ("assistant", "Yo.", BO_TIME, speakers[1]),
        ]
    ):
        b.message(
            "d",
            role,
            [BlockRow("text", text)],
            source_path="test",
            source_line=i + 1,
            timestamp=when if timed else None,
            is_real_user=role == "user",
            speaker=speaker,
        )
    return b.build()


def _texts(corpus: Corpus, text_format: str) -> list[str]:
    return policy_text(corpus, ContentPolicy(text_format=text_format))["text"].to_list()


ANN_DATE = "(1:56 pm on 8 May, 2023) "
BO_DATE = "(12:05:07 am on 9 May, 2023) "


@pytest.mark.parametrize(
    ("text_format", "timed", "expected"),
    [
        ("plain", True, ["Hi there. Bye.", "Yo."]),
        ("speaker", True, ["Ann: Hi there. Bye.", "Bo: Yo."]),
        ("date", True, [ANN_DATE + "Ann: Hi there. Bye.", BO_DATE + "Bo: Yo."]),
        ("locomo", True, [ANN_DATE + 'Ann said, "Hi there. Bye."', BO_DATE + 'Bo said, "Yo."']),
        ("plain", False, ["Hi there. Bye.", "Yo."]),
        ("speaker", False, ["Ann: Hi there. Bye.", "Bo: Yo."]),
        ("date", False, ["Ann: Hi there. Bye.", "Bo: Yo."]),
        ("locomo", False, ['Ann said, "Hi there. Bye."', 'Bo said, "Yo."']),
    ],
)
def test_each_format_writes_the_message_as_worked_out_by_hand(
    text_format: str, timed: bool, expected: list[str]
) -> None:
    assert _texts(_dialog(timed=timed), text_format) == expected


def test_the_prefix_is_part_of_the_chunks_and_their_token_counts() -> None:
    s = chunks(_dialog(), ContentPolicy(text_format="locomo"))
    assert s["text"].to_list() == [
        ANN_DATE + 'Ann said, "Hi there.',
        'Bye."',
        BO_DATE + 'Bo said, "Yo."',
    ]
    assert s["n_tokens"].to_list() == count_tokens(s["text"].to_list())
    u = convlab.units(s, "message")
    assert u["text"].to_list() == [
        ANN_DATE + 'Ann said, "Hi there. Bye."',
        BO_DATE + 'Bo said, "Yo."',
    ]


def test_a_message_without_a_speaker_gets_the_date_alone_and_no_quotes() -> None:
    c = _dialog(speakers=(None, "Bo"))
    assert _texts(c, "date") == [ANN_DATE + "Hi there. Bye.", BO_DATE + "Bo: Yo."]
    assert _texts(c, "locomo") == [ANN_DATE + "Hi there. Bye.", BO_DATE + 'Bo said, "Yo."']
    assert _texts(c, "speaker") == ["Hi there. Bye.", "Bo: Yo."]


def test_chats_get_no_prefix_in_any_format() -> None:
    c = _dialog(kind="chat")
    for name in TEXT_FORMATS:
        assert _texts(c, name) == ["Hi there. Bye.", "Yo."], name


def test_prefix_on_the_first_kept_block_and_quote_on_the_last() -> None:
    b = CorpusBuilder(strict=True)
    b.conversation("d", source_format="test", source_path="test", kind="dialog")
    blocks = [BlockRow("thinking", "hidden"), BlockRow("text", "One."), BlockRow("text", "Two.")]
    b.message(
        "d", "user", blocks, source_path="t", source_line=1, timestamp=ANN_TIME, speaker="Ann"
    )
    ok = [BlockRow("text", "Ok.")]
    b.message("d", "assistant", ok, source_path="t", source_line=2, speaker="Bo")
    c = b.build()
    # the thinking block is dropped by the policy, so "One." is the first kept block
    assert _texts(c, "locomo") == [ANN_DATE + 'Ann said, "One.', 'Two."', 'Bo said, "Ok."']
    assert _texts(c, "date") == [ANN_DATE + "Ann: One.", "Two.", "Bo: Ok."]


def test_date_text_is_locomos_own_form() -> None:
    times = [ANN_TIME, BO_TIME, datetime(2023, 12, 25, 12, 0, tzinfo=UTC), None]
    ts = pl.Series("t", times, dtype=pl.Datetime("us", "UTC"))
    assert pl.select(date_text(pl.lit(ts))).to_series().to_list() == [
        "1:56 pm on 8 May, 2023",
        "12:05:07 am on 9 May, 2023",
        "12:00 pm on 25 December, 2023",
        None,
    ]


def test_text_format_is_validated_listing_the_names() -> None:
    with pytest.raises(ValueError, match="text_format must be one of date, locomo, plain, speaker"):
        ContentPolicy(text_format="iso")


def test_speaker_labels_and_text_format_agree_or_are_refused() -> None:
    assert ContentPolicy(speaker_labels=False) == ContentPolicy(text_format="plain")
    assert ContentPolicy(speaker_labels=False).text_format == "plain"
    assert ContentPolicy().speaker_labels is True
    assert ContentPolicy(text_format="plain").speaker_labels is False
    assert ContentPolicy(speaker_labels=True, text_format="date").speaker_labels is True
    with pytest.raises(ValueError, match="speaker_labels=True contradicts text_format='plain'"):
        ContentPolicy(speaker_labels=True, text_format="plain")
    for name in ("date", "locomo"):
        with pytest.raises(ValueError, match=f"speaker_labels=False contradicts .*{name}"):
            ContentPolicy(speaker_labels=False, text_format=name)


def test_saved_policies_load_old_and_new() -> None:
    # what a run or store saved before text_format existed: speaker_labels alone
    old = ContentPolicy().as_dict()
    del old["text_format"]
    assert ContentPolicy(**old) == ContentPolicy()
    assert ContentPolicy(**{**old, "speaker_labels": False}).text_format == "plain"
    for name in TEXT_FORMATS:
        p = ContentPolicy(text_format=name)
        assert ContentPolicy(**json.loads(json.dumps(p.as_dict()))) == p
    assert StoreConfig(policy=ContentPolicy(speaker_labels=False)).policy.text_format == "plain"


# Columns added after the base commit, and empty for these strategies: left out of the digest
# (``context_tokens``: how much context a late-chunking unit saw; null for the others).
_ADDED = ("context_tokens",)


def _digest(frame: pl.DataFrame) -> str:
    added = [c for c in _ADDED if c in frame.columns]
    assert all(frame[c].null_count() == frame.height for c in added), added
    h = hashlib.sha256()
    for row in frame.drop(added).iter_rows():
        h.update(("\x1f".join("" if v is None else str(v) for v in row) + "\x1e").encode())
    return h.hexdigest()


# Computed on the base commit b076195 (speaker labels, no text_format) by the same digest.
SAMPLE_GOLDEN = {
    "chunks": (222, "4f38c47ecca366208e6719e11cb806e555966074d7b8b080908fd56f2afdc91a"),
    "message": (138, "7892d6d2934e7f21d17bb7b7f80012f3a2ebaeed6caaee26a5b7d34b34f75e2d"),
    "sequential": (222, "bcfcf285a99d0a185650c8d2a93c69788ebb3aef0fa253f8577cc74099483595"),
    "turn_pair": (222, "8cefef03804930be43b4d4622b879bfdc07ebd69c8289d7581790b2cdf95b26e"),
}
LOCOMO_GOLDEN = {
    "chunks": (17109, "f2dd9d0f063ea8f91ff25b0f6932252378662dfde9875a9fa116e5946a3dacbc"),
    "isolated": (17109, "8e3c890a7e5e6b46ffe7ee620054ff28c742755cfd21d0b1447373c452c50b50"),
    "message": (5882, "49a6736a163b57b15d8aae9c789c013f7813dce13f3de5946d80096326def91e"),
    "qa_pair": (5735, "e056727d5ca94b8b424f0532140ed79c4c00b7a798562a2ce79aa6bbe00cc079"),
    "sequential": (17109, "a62fe445ff5189cffd914d12e6f42aa22e833349c7b6f23d80e9bc78a195179a"),
    "turn_pair": (17109, "eccaba1bbc626b60cfa5e6c837ad383029fb2067a56e6806d83f9bd8eb2eb961"),
    "whole_turn": (2871, "f570a82fb1e4f02f819173236f730dcbbab60e4cc664cdfff5c55e52bd585d8a"),
}
# The same with speaker_labels=False on the base commit.
LOCOMO_PLAIN_GOLDEN = {
    "chunks": (17105, "3143254c16489aab609b065a0ce588d3e11676b336a33684fe8072bf5a80a20b"),
    "message": (5882, "913c3f138c5836aba0a4196c99e77ee170955125f844a221546d7c049dc1db0a"),
}


def _digests(corpus: Corpus, policy: ContentPolicy, names: list[str]) -> dict[str, tuple]:
    ch = chunks(corpus, policy)
    frames = {n: ch if n == "chunks" else convlab.units(ch, n) for n in names}
    return {n: (f.height, _digest(f)) for n, f in frames.items()}


def test_the_default_is_byte_identical_to_the_base_commit_on_the_sample() -> None:
    c = convlab.load(sample_data_path() / "transcripts")
    assert _digests(c, ContentPolicy(), list(SAMPLE_GOLDEN)) == SAMPLE_GOLDEN


def test_the_default_and_plain_are_byte_identical_to_the_base_commit_on_locomo(
    locomo_file: Path,
) -> None:
    c = convlab.load(locomo_file)
    assert _digests(c, ContentPolicy(), list(LOCOMO_GOLDEN)) == LOCOMO_GOLDEN
    for plain in (ContentPolicy(speaker_labels=False), ContentPolicy(text_format="plain")):
        assert _digests(c, plain, list(LOCOMO_PLAIN_GOLDEN)) == LOCOMO_PLAIN_GOLDEN


def test_locomo_session_times_come_back_exactly(locomo_file: Path) -> None:
    samples = json.loads(locomo_file.read_text(encoding="utf-8"))
    raw = [
        v
        for s in samples
        for k, v in s["conversation"].items()
        if k.endswith("_date_time") and isinstance(v, str)
    ]
    parsed = pl.Series([parse_session_time(v) for v in raw], dtype=pl.Datetime("us", "UTC"))
    written = pl.select(date_text(pl.lit(parsed))).to_series().to_list()
    assert len(raw) == 288
    assert written == [" ".join(v.split()) for v in raw]
