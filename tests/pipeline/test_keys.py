"""Key expansion (issue 23, point 3): keyphrases appended to what a unit embeds, by hand.

Chunks of one conversation ``c``, one message each, every word one WordPiece token:
``dog`` and ``cat`` on 2026-01-01, ``red`` on 2026-01-02 (two sessions:
``c@2026-01-01`` and ``c@2026-01-02``). ``message`` units: one per message, ``n_tokens`` 1 + 2
([CLS], [SEP]) = 3. With a stand-in extractor that returns the words of its text:

- source ``unit``: each unit gains its own word: ``dog dog`` (4 tokens), ``cat cat``, ``red red``;
- source ``session``: the first two gain ``dog cat`` (``dog dog cat``, 5 tokens), ``red`` gains
  ``red``;
- with ``max_tokens`` 4 only the first phrase fits: ``dog dog`` (4), ``cat dog`` (4).

On the code before this change the module :mod:`convlab.pipeline.keys` did not exist, and
``UnitSpec`` took no ``keys``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

import convlab.pipeline.keys as keys_module
from convlab import schema
from convlab.build import derive
from convlab.evaluation.config import EvalConfig
from convlab.pipeline.keys import KeyExpansion, expand_keys, keyphrases
from convlab.pipeline.units import units as make_units
from convlab.specs import UnitSpec
from convlab.systems.experiment import parse_experiment
from convlab.systems.system import System
from tests.helpers import chunks_frame, corpus

DAY1 = datetime(2026, 1, 1, 9, tzinfo=UTC)


def _chunks() -> pl.DataFrame:
    rows = [(0, 0, "user", 0, 0, "dog", 1), (0, 1, "assistant", 0, 0, "cat", 1)]
    rows.append((1, 2, "user", 0, 0, "red", 1))
    c = chunks_frame(rows, doc_kind="message")
    times = [DAY1, DAY1 + timedelta(hours=2), DAY1 + timedelta(days=1)]
    return c.with_columns(pl.Series("timestamp", times, dtype=schema.UTC_TIME))


@pytest.fixture
def words(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A stand-in extractor: the words of its text, in order; records what it was given."""
    seen: list[str] = []

    def fake(text: str, expansion: KeyExpansion, stopwords: object = ()) -> list[str]:
        seen.append(text)
        return text.split()[: expansion.phrases]

    monkeypatch.setattr(keys_module, "keyphrases", fake)
    return seen


def test_unit_and_session_sources_by_hand(words: list[str]) -> None:
    chunks = _chunks()
    units = make_units(chunks, "message")
    assert units["n_tokens"].to_list() == [3, 3, 3]
    own = expand_keys(units, chunks, KeyExpansion(source="unit"), max_tokens=256)
    assert own["text"].to_list() == ["dog dog", "cat cat", "red red"]
    assert own["n_tokens"].to_list() == [4, 4, 4]
    session = expand_keys(units, chunks, KeyExpansion(source="session"), max_tokens=256)
    assert session["text"].to_list() == ["dog dog cat", "cat dog cat", "red red"]
    assert session["n_tokens"].to_list() == [5, 5, 4]
    assert words[-2:] == ["dog cat", "red"]  # each session's text extracted once
    # what resurrection reads is untouched
    for frame in (own, session):
        assert frame["chunk_ids"].to_list() == units["chunk_ids"].to_list()
        assert frame["unit_id"].to_list() == units["unit_id"].to_list()


def test_phrases_stop_at_the_token_limit(words: list[str]) -> None:
    chunks = _chunks()
    units = make_units(chunks, "message")
    cut = expand_keys(units, chunks, KeyExpansion(source="session"), max_tokens=4)
    assert cut["text"].to_list() == ["dog dog", "cat dog", "red red"]
    assert cut["n_tokens"].to_list() == [4, 4, 4]
    full = expand_keys(units, chunks, KeyExpansion(source="session"), max_tokens=3)
    assert full["text"].to_list() == ["dog", "cat", "red"]  # no room: nothing appended


def test_yake_phrases_leave_out_speakers_and_greetings() -> None:
    text = (
        "Caroline: Hey Mel! I went to the LGBTQ support group yesterday. "
        "Caroline: The support group was powerful. Caroline: Wow, the support group helps."
    )
    found = keyphrases(text, KeyExpansion(phrases=5), stopwords={"Caroline"})
    assert found, "YAKE found no phrase"
    assert any("support group" in p.lower() for p in found)
    assert not any("caroline" in p.lower() or p.lower() in {"hey", "wow"} for p in found)
    with_name = keyphrases(text, KeyExpansion(phrases=5))
    assert any("caroline" in p.lower() for p in with_name)  # the stopword is what removes it
    assert keyphrases("   ", KeyExpansion()) == []


def test_derive_expands_units_but_not_chunks() -> None:
    text = "The support group met yesterday at the library near the lake."
    data = corpus({"a": [("user", text, True, "Ann"), ("assistant", "Ann liked it.", False, "Bo")]})
    plain = derive(data, UnitSpec("message"))
    keyed = derive(data, UnitSpec("message", keys=KeyExpansion(source="unit", phrases=3)))
    assert keyed.chunks.equals(plain.chunks)
    assert keyed.units["chunk_ids"].to_list() == plain.units["chunk_ids"].to_list()
    for before, after in zip(plain.units["text"], keyed.units["text"], strict=True):
        assert after.startswith(before)
    assert keyed.units["text"].to_list() != plain.units["text"].to_list()
    assert (keyed.units["n_tokens"] >= plain.units["n_tokens"]).all()


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"source": "turn"}, "not one of unit, session"),
        ({"phrases": 0}, "1 to 50"),
        ({"phrases": True}, "1 to 50"),
        ({"max_words": 6}, "1 to 5"),
    ],
)
def test_expansion_is_validated(bad: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KeyExpansion(**bad)  # type: ignore[arg-type]


def test_systems_and_experiment_files_name_keys() -> None:
    table = {
        "name": "message+keys",
        "strategy": "message",
        "retrieval": "dense",
        "options": {},
        "keys": {"source": "session", "phrases": 4, "max_words": 2},
    }
    (system,) = parse_experiment({"systems": [table]}, "x.toml").systems
    assert system.keys == KeyExpansion(source="session", phrases=4, max_words=2)
    assert system.as_dict() == table
    assert System.from_dict(system.as_dict()) == system
    assert System(name="m", strategy="message").keys is None  # off by default
    bad = {**table, "keys": {"source": "turn"}}
    with pytest.raises(ValueError, match=r"x.toml: systems\[0\].keys.source"):
        parse_experiment({"systems": [bad]}, "x.toml")
    specs = EvalConfig().units(["message"], None, system.keys)
    assert specs == [UnitSpec("message", keys=system.keys)]
    assert EvalConfig().units(["message"])[0].keys is None
