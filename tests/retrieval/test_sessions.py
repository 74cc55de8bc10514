"""Session-first retrieval (issue 23, point 3): scores mixed with the session's best, by hand.

Four docs in rank order, sessions A, B, C, A, scores 0.9, 0.6, 0.55, 0.5. The sessions' best:
A 0.9, B 0.6, C 0.55.

- weight 0.5: 0.9, 0.6, 0.55, (0.5 + 0.9) / 2 = 0.7: the order 0, 3, 1, 2 (the A doc rises);
- weight 1: 0.9, 0.6, 0.55, 0.9: 0, 3, 1, 2 (ties keep their first order);
- weight 0: unchanged, 0, 1, 2, 3;
- top 2, weight 0: sessions A, B kept: 0 (0.9), 1 (0.6), 3 (0.5);
- top 1, weight 0.5: A only: 0 (0.9), 3 (0.7).

In the ranker the sessions come from the units' conversations and times
(:func:`convlab.schema.session_id`: one conversation's messages of one UTC day). On the code
before this change :mod:`convlab.retrieval.sessions` did not exist.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import polars as pl
import pytest

from convlab.protocols import Candidates, Query, RankContext
from convlab.retrieval import SearchOptions
from convlab.retrieval.options import doc_rankers
from convlab.retrieval.rankers import Session
from convlab.retrieval.sessions import session_first
from convlab.schema import session_id
from convlab.systems.experiment import parse_experiment
from convlab.systems.system import System

SCORES = [0.9, 0.6, 0.55, 0.5]
SESSIONS = ["A", "B", "C", "A"]


@pytest.mark.parametrize(
    ("weight", "top", "order", "mixed"),
    [
        (0.5, None, [0, 3, 1, 2], [0.9, 0.6, 0.55, 0.7]),
        (1.0, None, [0, 3, 1, 2], [0.9, 0.6, 0.55, 0.9]),
        (0.0, None, [0, 1, 2, 3], SCORES),
        (0.0, 2, [0, 1, 3], SCORES),
        (0.5, 1, [0, 3], [0.9, 0.6, 0.55, 0.7]),
    ],
)
def test_session_first_by_hand(
    weight: float, top: int | None, order: list[int], mixed: list[float]
) -> None:
    scores, keep = session_first(SCORES, SESSIONS, weight=weight, top=top)
    assert keep.tolist() == order
    assert scores.tolist() == pytest.approx(mixed)


def test_session_id_is_a_conversations_day() -> None:
    morning = datetime(2023, 5, 8, 0, 5, tzinfo=UTC)
    assert session_id("c", morning) == "c@2023-05-08"
    assert session_id("c", morning.replace(hour=23)) == "c@2023-05-08"
    assert session_id("c", datetime(2023, 5, 9, tzinfo=UTC)) == "c@2023-05-09"
    assert session_id("d", None) == "d"


def _context(times: list[datetime | None]) -> RankContext:
    n = len(times)

    class Vectors:
        def vectors(self, rows: np.ndarray) -> np.ndarray:
            return np.zeros((len(rows), 2), dtype=np.float32)

    return RankContext(
        query=Query("q", np.zeros(2, dtype=np.float32)),
        units=pl.DataFrame({"unit_id": [f"u{i}" for i in range(n)]}),
        conversation_of_row=np.array(["c"] * n),
        times=times,
        doc_ids=[[f"d{i}"] for i in range(n)],
        index=Vectors(),  # type: ignore[arg-type]
        now=None,
        k=10,
    )


def test_the_ranker_reads_sessions_from_units() -> None:
    day = datetime(2023, 5, 8, 10, tzinfo=UTC)
    # rows 0 and 3 on one day (session A), row 1 the next day, row 2 undated (the conversation)
    times = [day, datetime(2023, 5, 9, tzinfo=UTC), None, day.replace(hour=23)]
    ranked = Session(weight=0.5)(
        Candidates.of([0, 1, 2, 3], SCORES, ["d0", "d1", "d2", "d3"]), _context(times)
    )
    assert ranked.rows.tolist() == [0, 3, 1, 2]
    assert ranked.docs == ("d0", "d3", "d1", "d2")
    assert ranked.scores.tolist() == pytest.approx([0.9, 0.7, 0.6, 0.55])


def test_options_switch_it_on_and_widen_the_pool() -> None:
    off = SearchOptions.of(k=10)
    assert off.ranker("session") is None
    assert "session" not in off.ranker_names
    assert off.pool == 10
    on = SearchOptions.of(k=10, session={"weight": 0.25, "top": 3})
    assert on.ranker("session") == Session(weight=0.25, top=3)
    assert on.ranker_names == ("session",)
    assert on.pool == 50
    assert on.scoring == "cosine+session"
    assert isinstance(doc_rankers(on)[0], Session)
    assert on.replace(k=3).ranker("session") == on.ranker("session")
    with pytest.raises(ValueError, match=r"unknown key.*weigh.*valid: weight, top"):
        SearchOptions.of(session={"weigh": 0.5})


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"weight": 1.5}, r"\[0, 1\]"),
        ({"weight": -0.1}, r"\[0, 1\]"),
        ({"top": 0}, r"session.top must be an integer in \[1, 100000\], not 0"),
    ],
)
def test_setting_is_validated(bad: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Session(**bad)  # type: ignore[arg-type]


def test_experiment_file_round_trip() -> None:
    table = {
        "name": "message+session",
        "strategy": "message",
        "retrieval": "dense",
        "options": {"session": {"weight": 0.0, "top": 3}},
    }
    (system,) = parse_experiment({"systems": [table]}, "x.toml").systems
    assert system.options.ranker("session") == Session(weight=0.0, top=3)
    assert system.as_dict() == table
    assert System.from_dict(system.as_dict()) == system
    bad = {**table, "options": {"session": {"weight": 2.0}}}
    with pytest.raises(ValueError, match=r"x.toml: systems\[0\].options.session.weight"):
        parse_experiment({"systems": [bad]}, "x.toml")
