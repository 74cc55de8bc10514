"""LoCoMo: counts from its README, evidence cleaning worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from convlab.loaders import load
from convlab.loaders.locomo import clean_evidence, evidence_report, parse_session_time


@pytest.fixture(scope="module")
def corpus(locomo_file: Path):  # type: ignore[no-untyped-def]
    return load(locomo_file)


@pytest.mark.locomo
def test_counts_match_the_dataset_card(corpus) -> None:  # type: ignore[no-untyped-def]
    assert corpus.conversations.height == 10
    assert corpus.messages.height == 5882
    assert (
        corpus.messages.select(pl.struct("conversation_id", "session_index").n_unique()).item()
        == 272
    )
    assert corpus.queries.height == 1986
    cats = dict(corpus.queries.group_by("category").len().iter_rows())
    assert cats == {
        "multi-hop": 282,
        "temporal": 321,
        "open-domain": 96,
        "single-hop": 841,
        "adversarial": 446,
    }
    assert set(corpus.conversations["kind"]) == {"dialog"}


@pytest.mark.locomo
def test_evidence_cleaning_totals(corpus) -> None:  # type: ignore[no-untyped-def]
    # Found by hand in locomo10.json: "D8:6; D9:17", "D9:1 D4:4 D4:6", "D22:1 D22:2 D9:10 D9:11",
    # "D21:18 D21:22 D11:15 D11:19" are split and "D:11:26" repaired (5 fixed); "D" and three
    # ids naming no utterance are dropped (4); 5 questions end with no evidence.
    assert evidence_report() == {
        "questions": 1986,
        "evidence_fixed": 5,
        "evidence_dropped": 4,
        "no_evidence": 5,
    }
    q = corpus.queries.filter(pl.col("query_id") == "conv-26:q0")
    assert q["relevant"].item().to_list() == ["conv-26:m2"]  # D1:3 is the third utterance


def test_clean_evidence_by_hand() -> None:
    known = {"D1:2", "D1:3", "D11:26"}
    out = clean_evidence(["D1:2; D1:3", "D", "D:11:26", "D9:9", "D1:2", 7], known)
    assert out.ids == ["D1:2", "D1:3", "D11:26"]
    assert out.n_fixed == 2  # the split and the repaired id
    assert out.n_dropped == 3  # "D", D9:9 (unknown), 7 (not a string)


def test_session_time() -> None:
    t = parse_session_time("1:56 pm on 8 May, 2023")
    assert t is not None
    assert (t.year, t.month, t.day, t.hour, t.minute) == (2023, 5, 8, 13, 56)


def test_variant_field_names(tmp_path: Path) -> None:
    data = [
        {
            "sample_id": "v1",
            "dialog": {
                "speaker_a": "Ann",
                "speaker_b": "Bo",
                "session_1": [
                    {
                        "speaker": "Ann",
                        "dia_id": "D1:1",
                        "clean_text": "Hi Bo.",
                        "timestamp": "2024-01-02T10:00:00Z",
                    },
                    {
                        "speaker": "Bo",
                        "dia_id": "D1:2",
                        "utterance": "Hey Ann!",
                        "blip_caption": "a dog on a beach",
                    },
                ],
                "session_1_date_time": "9:00 am on 2 January, 2024",
            },
            "qa": [
                {"question": "Who has a dog?", "answer": "Bo", "evidence": ["D1:2"], "category": 4}
            ],
        }
    ]
    path = tmp_path / "variant.json"
    path.write_text(json.dumps(data))
    c = load(path)
    assert c.blocks["text"].to_list() == ["Hi Bo.", "Hey Ann! [shares a photo: a dog on a beach]"]
    assert c.messages["role"].to_list() == ["user", "assistant"]
    assert c.messages["timestamp"][0].hour == 10  # the utterance's own timestamp wins
    assert c.messages["timestamp"][1].hour == 9  # the session's
    assert c.queries["relevant"].item().to_list() == ["v1:m1"]
