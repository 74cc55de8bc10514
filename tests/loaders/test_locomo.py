"""LoCoMo and its family: counts from the README and by hand, evidence cleaning worked by hand.

The family fixture ``tests/fixtures/locomo_family/realtalk_style`` is a directory of two files,
one conversation each, sessions at the top level, speaker names under ``name``, per-utterance
dates like ``"29.12.2023, 22:42:04"``, text under ``clean_text`` (file 1) or ``text`` (file 2):

- Chat_1_Emi_Elise: 4 + 3 utterances, 5 questions. Evidence: ``D1:1``; ``"D1:2-D1:3; D2:1"``
  (a list split, a range expanded: D1:2, D1:3, D2:1); ``"D1:4."`` and ``"D2:2,"`` (punctuation
  stripped twice); ``"D2:9"`` (unknown: dropped, the question has no evidence left);
  ``"D:2:3"`` and ``"D2:3"`` (one id repaired, then a duplicate removed).
- Chat_2_Kai_Noor: 3 + 2 utterances, 4 questions. ``"D1:1-3"`` (a range: D1:1..D1:3); the string
  ``"D2:1; D2:2"`` (a list split); ``"D1:3-D2:1"`` (a range across sessions: D1:3, D2:1);
  ``"D"``, ``7`` and ``"D1:2"`` (one malformed, one not a string, D1:2 kept).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from convlab.evaluation.datasets import load_labelled, locomo
from convlab.loaders import LoadError, load
from convlab.loaders.locomo import REPAIRS, clean_evidence, parse_session_time

FAMILY = Path(__file__).parent.parent / "fixtures" / "locomo_family" / "realtalk_style"


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
def test_evidence_cleaning_totals(locomo_file: Path) -> None:
    # Found by hand in locomo10.json: "D8:6; D9:17", "D9:1 D4:4 D4:6", "D22:1 D22:2 D9:10 D9:11",
    # "D21:18 D21:22 D11:15 D11:19" are split and "D:11:26" repaired; "D" is malformed and three
    # ids name no utterance; one question lists an id twice; 5 questions end with no evidence.
    data = locomo(locomo_file, strict=True)
    assert data.name == "locomo10"  # from the file, not the reader
    assert data.cleaning == {
        "questions": 1986,
        "no_evidence": 5,
        "lists_split": 4,
        "ranges_expanded": 0,
        "punctuation_stripped": 0,
        "ids_repaired": 1,
        "duplicates_removed": 1,
        "unknown_dropped": 3,
        "malformed_dropped": 1,
        "not_string_dropped": 0,
    }
    q = data.queries.filter(pl.col("query_id") == "conv-26:q0")
    assert q["relevant"].item().to_list() == ["conv-26:m2"]  # D1:3 is the third utterance


def test_clean_evidence_by_hand() -> None:
    known = ["D1:2", "D1:3", "D11:26"]
    out = clean_evidence(["D1:2; D1:3", "D", "D:11:26", "D9:9", "D1:2", 7], known)
    assert out.ids == ["D1:2", "D1:3", "D11:26"]
    assert dict(out.repairs) == {
        "lists_split": 1,
        "malformed_dropped": 1,  # "D"
        "ids_repaired": 1,  # D:11:26
        "unknown_dropped": 1,  # D9:9
        "duplicates_removed": 1,  # the second D1:2
        "not_string_dropped": 1,  # 7
    }
    assert out.n_dropped == 3


@pytest.mark.parametrize(
    ("raw", "ids", "repairs"),
    [
        (["D1:2-D1:4"], ["D1:2", "D1:3", "D1:4"], {"ranges_expanded": 1}),
        (["D1:2 - 4"], ["D1:2", "D1:3", "D1:4"], {"ranges_expanded": 1}),
        (["D1:4-D2:1"], ["D1:4", "D2:1"], {"ranges_expanded": 1}),  # across sessions
        (["D1:4-D1:2"], [], {"unknown_dropped": 1}),  # backwards
        (["D1:3-D1:9"], [], {"unknown_dropped": 1}),  # ends nowhere
        (["D1:3-x"], [], {"malformed_dropped": 1}),
        (["D1:3.", "(D2:1)"], ["D1:3", "D2:1"], {"punctuation_stripped": 2}),
        (["D1:2, D2:1;"], ["D1:2", "D2:1"], {"punctuation_stripped": 1, "lists_split": 1}),
        (["D1 : 3"], ["D1:3"], {}),  # spaces around the colon: read as written
    ],
)
def test_evidence_ranges_lists_punctuation(raw: list, ids: list[str], repairs: dict) -> None:
    known = ["D1:1", "D1:2", "D1:3", "D1:4", "D2:1"]
    out = clean_evidence(raw, known)
    assert out.ids == ids
    assert dict(out.repairs) == repairs
    assert set(repairs) <= set(REPAIRS)


def test_family_directory_loads_strict_with_counts_by_hand() -> None:
    data = load_labelled(FAMILY, strict=True)
    assert data.name == "realtalk_style"  # the folder's name
    c = data.corpus
    assert c.conversations["conversation_id"].to_list() == ["Chat_1_Emi_Elise", "Chat_2_Kai_Noor"]
    assert c.conversations["title"].to_list() == ["Emi & Elise", "Kai & Noor"]
    assert c.messages.height == 12
    assert c.report.n_skipped == 0
    assert data.queries.height == 9
    assert data.cleaning == {
        "questions": 9,
        "no_evidence": 1,
        "lists_split": 2,
        "ranges_expanded": 3,
        "punctuation_stripped": 2,
        "ids_repaired": 1,
        "duplicates_removed": 1,
        "unknown_dropped": 1,
        "malformed_dropped": 1,
        "not_string_dropped": 1,
    }
    rel = {q: list(r) for q, r in data.queries.select("query_id", "relevant").iter_rows()}
    assert rel["Chat_1_Emi_Elise:q1"] == [f"Chat_1_Emi_Elise:m{i}" for i in (1, 2, 4)]
    assert rel["Chat_1_Emi_Elise:q3"] == []
    # numbered categories are not LoCoMo's outside its layout: kept as written
    assert data.queries["category"].to_list()[:3] == ["4", "1", "4"]
    assert rel["Chat_2_Kai_Noor:q0"] == [f"Chat_2_Kai_Noor:m{i}" for i in (0, 1, 2)]
    assert rel["Chat_2_Kai_Noor:q2"] == ["Chat_2_Kai_Noor:m2", "Chat_2_Kai_Noor:m3"]
    emi = c.messages.filter(pl.col("conversation_id") == "Chat_1_Emi_Elise")
    assert emi["role"].to_list() == ["user", "assistant"] * 3 + ["user"]  # Emi, Elise, ...
    assert emi["speaker"][1] == "Elise"
    assert emi["session_index"].to_list() == [1] * 4 + [2] * 3
    t = emi["timestamp"][0]  # the utterance's own "29.12.2023, 22:42:04"
    assert (t.year, t.month, t.day, t.hour, t.minute, t.second) == (2023, 12, 29, 22, 42, 4)


def test_one_file_of_the_family(tmp_path: Path) -> None:
    data = load_labelled(FAMILY / "Chat_2_Kai_Noor.json", strict=True)
    assert data.name == "Chat_2_Kai_Noor"
    assert data.corpus.messages.height == 5
    assert data.cleaning["ranges_expanded"] == 2


def test_unrecognised_files_get_a_load_error(tmp_path: Path) -> None:
    other = tmp_path / "notes.json"
    other.write_text('{"title": "not a dialog"}')
    with pytest.raises(LoadError, match=r"notes\.json:0: unrecognised labelled data; expected"):
        load_labelled(other)
    folder = tmp_path / "family"
    folder.mkdir()
    (folder / "a.json").write_text((FAMILY / "Chat_1_Emi_Elise.json").read_text())
    (folder / "b.json").write_text("[1, 2]")
    with pytest.raises(LoadError, match=r"b\.json:0: not a LoCoMo-family file"):
        load_labelled(folder)
    # looks like the family (dia_id) but holds no sample
    (folder / "b.json").write_text('{"qa": [], "dia_id": "D1:1"}')
    with pytest.raises(LoadError, match=r"b\.json:1: no LoCoMo-family sample; expected"):
        load_labelled(folder)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LoadError, match="no labelled data here"):
        load_labelled(empty)


def test_two_samples_with_one_id_are_not_merged(tmp_path: Path) -> None:
    sample = json.loads((FAMILY / "Chat_2_Kai_Noor.json").read_text())
    sample["sample_id"] = "same"
    (tmp_path / "x.json").write_text(json.dumps([sample, sample]))
    with pytest.raises(LoadError, match="conversation id 'same' was read already"):
        load_labelled(tmp_path / "x.json", strict=True)
    lenient = load_labelled(tmp_path / "x.json")
    assert lenient.corpus.messages.height == 5
    assert lenient.corpus.report.n_skipped == 1


def test_dates_of_the_family() -> None:
    t = parse_session_time("29.12.2023, 22:42:04")
    assert t is not None
    assert (t.day, t.month, t.hour, t.second) == (29, 12, 22, 4)
    assert parse_session_time("not a date") is None


def test_no_assert_checks_user_input() -> None:
    root = Path(__file__).parent.parent.parent / "convlab"
    files = [
        *sorted((root / "loaders").glob("*.py")),
        root / "evaluation" / "datasets.py",
        root / "evaluation" / "queries.py",
    ]
    offenders = [
        f"{f.name}:{n}"
        for f in files
        for n, line in enumerate(f.read_text().splitlines(), start=1)
        if line.strip().startswith("assert ")
    ]
    assert offenders == []


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
