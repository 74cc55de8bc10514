"""The time boost: windows read from questions, the boost by hand, the query's anchor in search.

Windows (anchor 2023-08-01): "in March 2023" is the calendar month [03-01, 04-01); "in 2022" the
year [2022-01-01, 2023-01-01); "a week ago" names 2023-07-25, a week period: the seven days
centred on it, [07-22, 07-29); "When did Caroline go to the support group?" names no time, and
"How long ago was her 18th birthday?" only an ordinal (dateparser reads "18th" as a date: not
kept).

The boost: scores [2, 3, 4], times 05-09, 06-03, undated, window May 2023: only the first is
inside, 2 + 1 * 2 = 4; with slack 3 days the second (06-03 < 06-01 + 3 days) is too, 3 + 3 = 6.

In search (BM25 over four units): u0 and u1 both read "i sing songs" in conversation c1, at
01-02 and 01-13; u2 "quiet evening" at 01-20; u3 "i sing" in c2 at 06-01. "Where did I sing a
week ago?" scoped to c1 is read from c1's last message time, 01-20: the window [01-10, 01-17)
holds u1, which rises above its twin u0 with twice its score (boost 1). Given the question's
own time 01-09 instead, the window is [12-30, 01-06): u0 rises.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import polars as pl
import pytest

from convlab import schema
from convlab.embed import HashEmbedder
from convlab.index import VectorIndex
from convlab.index.bm25 import BM25Index
from convlab.protocols import Candidates, Query, RankContext
from convlab.retrieval import SearchOptions, search_many
from convlab.retrieval.rankers import TimeBoost, time_boost
from convlab.retrieval.temporal import period_window, time_windows
from convlab.systems.experiment import parse_experiment


def _d(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


ANCHOR = _d(2023, 8, 1)


def test_period_windows_by_hand() -> None:
    assert period_window(datetime(2023, 12, 9, 5), "month") == (
        datetime(2023, 12, 1),
        datetime(2024, 1, 1),
    )
    assert period_window(datetime(2023, 2, 9), "year") == (
        datetime(2023, 1, 1),
        datetime(2024, 1, 1),
    )
    assert period_window(datetime(2023, 2, 9, 7), "week") == (
        datetime(2023, 2, 6),
        datetime(2023, 2, 13),
    )
    assert period_window(datetime(2023, 2, 9, 7), "day") == (
        datetime(2023, 2, 9),
        datetime(2023, 2, 10),
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "What did John attend with his colleagues in March 2023?",
            [(_d(2023, 3, 1), _d(2023, 4, 1))],
        ),
        ("What happened to John's job situation in 2022?", [(_d(2022, 1, 1), _d(2023, 1, 1))]),
        ("Which book did I finish a week ago?", [(_d(2023, 7, 22), _d(2023, 7, 29))]),
        ("When did Caroline go to the LGBTQ support group?", []),
        ("How long ago was Caroline's 18th birthday?", []),
    ],
)
def test_windows_read_from_questions(text: str, expected: list[tuple[datetime, datetime]]) -> None:
    assert time_windows(text, ANCHOR) == expected


def test_boost_by_hand() -> None:
    window = [(_d(2023, 5, 1), _d(2023, 6, 1))]
    times = [_d(2023, 5, 9), _d(2023, 6, 3), None]
    scores = np.array([2.0, 3.0, 4.0])
    assert time_boost(scores, times, window, boost=1.0).tolist() == [4.0, 3.0, 4.0]
    assert time_boost(scores, times, window, boost=1.0, slack_days=3).tolist() == [4.0, 6.0, 4.0]
    assert time_boost(scores, times, [], boost=1.0).tolist() == [2.0, 3.0, 4.0]
    assert time_boost(np.array([-2.0]), [_d(2023, 5, 2)], window, boost=0.5).tolist() == [-1.0]


def test_ranker_reorders_by_the_anchor() -> None:
    times = [_d(2023, 7, 1), _d(2023, 3, 10)]
    context = RankContext(
        query=Query("What did he do in March 2023?", np.zeros(2, dtype=np.float32)),
        units=pl.DataFrame(),
        conversation_of_row=np.array(["c", "c"]),
        times=times,
        doc_ids=[["a"], ["b"]],
        index=None,  # type: ignore[arg-type]
        now=None,
        k=2,
        anchor=ANCHOR,
    )
    out = TimeBoost(boost=0.5)(Candidates.of([0, 1], [3.0, 2.5], ["a", "b"]), context)
    assert out.docs == ("b", "a")
    assert out.scores.tolist() == [3.75, 3.0]


UNITS = [
    ("c1", "i sing songs", _d(2023, 1, 2, 12)),
    ("c1", "i sing songs", _d(2023, 1, 13, 12)),
    ("c1", "quiet evening", _d(2023, 1, 20, 12)),
    ("c2", "i sing", _d(2023, 6, 1, 12)),
]


@pytest.fixture(scope="module")
def index() -> tuple[VectorIndex, BM25Index]:
    rows = [
        {
            "unit_id": f"u{i}",
            "strategy": "message",
            "conversation_id": c,
            "turn_index": i,
            "message_index": i,
            "doc_ids": [f"{c}:m{i}"],
            "text": text,
            "n_tokens": 5,
            "chunk_ids": [f"k{i}"],
            "timestamp": t,
        }
        for i, (c, text, t) in enumerate(UNITS)
    ]
    units = schema.frame(rows, schema.UNITS)
    vectors = np.eye(4, dtype=np.float32)
    return VectorIndex.build(units, vectors, model_id="toy"), BM25Index.build(units)


def _search(index: tuple[VectorIndex, BM25Index], temporal: dict | None, time: datetime | None):  # type: ignore[no-untyped-def]
    queries = pl.DataFrame(
        {
            "query_id": ["q"],
            "text": ["Where did I sing a week ago?"],
            "conversation_id": ["c1"],
            "time": pl.Series([time], dtype=schema.UTC_TIME),
        }
    )
    options = SearchOptions.of(retrieval="lexical", k=3, temporal=temporal)
    return search_many(
        index[0], queries, embedder=HashEmbedder(4), options=options, bm25=index[1], scoped=True
    )


def test_search_reads_relative_times_from_the_scope_or_the_question(index) -> None:  # type: ignore[no-untyped-def]
    plain = _search(index, None, None)
    assert plain["unit_id"].to_list() == ["u0", "u1"]  # twins: the first row first
    s = plain["score"][0]
    from_scope = _search(index, {"boost": 1.0}, None)  # anchor 01-20: u1 at 01-13 inside
    assert from_scope["unit_id"].to_list() == ["u1", "u0"]
    assert from_scope["score"].to_list() == pytest.approx([2 * s, s])
    asked = _search(index, {"boost": 1.0}, _d(2023, 1, 9))  # anchor 01-09: u0 at 01-02 inside
    assert asked["unit_id"].to_list() == ["u0", "u1"]
    assert asked["score"].to_list() == pytest.approx([2 * s, s])


def test_config_and_experiment_file() -> None:
    options = SearchOptions.of(temporal={"boost": 4.0, "slack_days": 14})
    assert options.ranker("temporal") == TimeBoost(boost=4.0, slack_days=14.0)
    assert options.ranker_names == ("temporal",)
    assert SearchOptions.of(retrieval="lexical", temporal={}).scoring == "bm25+temporal"
    assert SearchOptions().ranker("temporal") is None
    assert "temporal" not in SearchOptions().ranker_names
    with pytest.raises(ValueError, match="boost"):
        TimeBoost(boost=-1.0)
    with pytest.raises(ValueError, match="unknown key"):
        SearchOptions.of(temporal={"strength": 1.0})
    doc = {
        "systems": [
            {
                "name": "t",
                "strategy": "message",
                "options": {"temporal": {"boost": 0.25, "slack_days": 45.0}},
            }
        ]
    }
    system = parse_experiment(doc, "x.toml").systems[0]
    assert system.options.ranker("temporal") == TimeBoost(boost=0.25, slack_days=45.0)
    with pytest.raises(ValueError, match="temporal"):
        parse_experiment(
            {
                "systems": [
                    {"name": "t", "strategy": "message", "options": {"temporal": {"boost": 2000.0}}}
                ]
            },
            "x.toml",
        )
