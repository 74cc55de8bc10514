"""The second retrieval round and the session cap, by hand.

Decayed RRF (k 1, decay 0.5): round 1 ranks d1, d2; the seed's round d2 (row 7), d3.
d1 = 1/2 = 0.5; d2 = 1/3 + 0.5/2 = 7/12; d3 = 0.5/3 = 1/6: the order d2, d1, d3, and d2 keeps
row 7, where it ranked best (1st against 2nd).

In search (BM25): u0 "alpha beta", u1 "beta gamma", u2 "delta". "alpha" matches u0 alone; its
second round (1 seed, u0's text "alpha beta") ranks u0 (both terms), then u1 (beta): fused,
d0 = 1/2 + 0.5/2 = 0.75 and d1 = 0.5/3 = 1/6; d1, which shares no word with the question, comes
back second.

The session cap (cap 2): sessions a, a, a, b with scores 5, 4, 3, 2: a's third doc goes after b's,
rescored 3 - (3 - 2) - 1e-9 = 2 - 1e-9, below b's 2.
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
from convlab.retrieval.rankers import SessionCap, sessions_capped
from convlab.retrieval.rankers.session_cap import session_keys
from convlab.retrieval.second_round import SecondRound, fuse_rounds, seeded_rounds
from convlab.systems.experiment import parse_experiment

FIRST = Candidates.of([1, 2], [9.0, 8.0], ["d1", "d2"])
SEED = Candidates.of([7, 3], [5.0, 4.0], ["d2", "d3"])


def test_fuse_rounds_by_hand() -> None:
    fused = fuse_rounds([FIRST, SEED], SecondRound(seeds=1, decay=0.5, k=1))
    assert fused.docs == ("d2", "d1", "d3")
    assert fused.rows.tolist() == [7, 1, 3]
    assert fused.scores.tolist() == pytest.approx([7 / 12, 0.5, 1 / 6])
    none = fuse_rounds([FIRST, None], SecondRound(k=1))  # a seed that found nothing
    assert none.docs == ("d1", "d2")
    with pytest.raises(ValueError, match="group"):
        fuse_rounds([Candidates.of([1], [1.0])], SecondRound())


def test_seeds_are_the_first_rounds_best_rows() -> None:
    asked: list[str] = []

    def seed(row: int) -> Query:
        return Query(f"row{row}", np.zeros(1, dtype=np.float32))

    def search(query: Query) -> Candidates | None:
        asked.append(query.text)
        return SEED

    out = seeded_rounds(FIRST, SecondRound(seeds=1, decay=0.5, k=1), seed, search)
    assert asked == ["row1"]
    assert out is not None
    assert out.docs == ("d2", "d1", "d3")
    assert seeded_rounds(None, SecondRound(), seed, search) is None


def _units(texts: list[str]) -> pl.DataFrame:
    rows = [
        {
            "unit_id": f"u{i}",
            "strategy": "message",
            "conversation_id": "c",
            "turn_index": i,
            "message_index": i,
            "doc_ids": [f"c:m{i}"],
            "text": text,
            "n_tokens": 4,
            "chunk_ids": [f"k{i}"],
        }
        for i, text in enumerate(texts)
    ]
    return schema.frame(rows, schema.UNITS)


def test_second_round_in_search_by_hand() -> None:
    units = _units(["alpha beta", "beta gamma", "delta"])
    index = VectorIndex.build(units, np.eye(3, dtype=np.float32), model_id="toy")
    bm25 = BM25Index.build(units)
    queries = pl.DataFrame({"query_id": ["q"], "text": ["alpha"]})

    def run(**options: object) -> pl.DataFrame:
        opts = SearchOptions.of(retrieval="lexical", k=3, **options)  # type: ignore[arg-type]
        return search_many(index, queries, embedder=HashEmbedder(3), options=opts, bm25=bm25)

    assert run()["doc_id"].to_list() == ["c:m0"]
    hits = run(second_round={"seeds": 1, "decay": 0.5, "k": 1})
    assert hits["doc_id"].to_list() == ["c:m0", "c:m1"]
    assert hits["score"].to_list() == pytest.approx([0.75, 1 / 6])
    dense = SearchOptions.of(k=3, second_round={"seeds": 1, "k": 1})  # the seed's stored vector
    found = search_many(index, queries, embedder=HashEmbedder(3), options=dense, bm25=bm25)
    assert found.height == 3


def test_sessions_capped_by_hand() -> None:
    assert sessions_capped(["a", "a", "a", "b", "a"], 2).tolist() == [0, 1, 3, 2, 4]
    assert sessions_capped(["a", "b"], 1).tolist() == [0, 1]
    day = datetime(2023, 5, 8, 13, tzinfo=UTC)
    assert session_keys(["c", "c", "d"], [day, None, day]) == ["c@2023-05-08", "c", "d@2023-05-08"]


def test_session_cap_ranker_by_hand() -> None:
    a, b = datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 5, 2, tzinfo=UTC)
    context = RankContext(
        query=Query("q", np.zeros(1, dtype=np.float32)),
        units=pl.DataFrame(),
        conversation_of_row=np.array(["c"] * 4),
        times=[a, a, a, b],
        doc_ids=[["d0"], ["d1"], ["d2"], ["d3"]],
        index=None,  # type: ignore[arg-type]
        now=None,
        k=4,
    )
    out = SessionCap(2)(Candidates.of([0, 1, 2, 3], [5.0, 4.0, 3.0, 2.0], list("wxyz")), context)
    assert out.docs == ("w", "x", "z", "y")
    assert out.scores.tolist() == pytest.approx([5.0, 4.0, 2.0, 2.0 - 1e-9], abs=1e-12)
    assert out.scores[3] < out.scores[2]
    with pytest.raises(
        ValueError, match=r"session_cap.cap must be an integer in \[1, 10000\], not 0"
    ):
        SessionCap(0)


def test_options_and_experiment_file() -> None:
    options = SearchOptions.of(second_round={"seeds": 2}, session_cap=2)
    assert options.retrieval.second_round == SecondRound(seeds=2, decay=0.5, k=60)
    assert options.ranker_names == ("session_cap",)
    assert SearchOptions.of(mmr=0.5, session_cap=1, recency=True).ranker_names == (
        "recency",
        "session_cap",
        "mmr",
    )
    assert SearchOptions.of(retrieval="lexical", second_round={}).scoring == "rounds"
    default = SearchOptions()
    assert default.retrieval.second_round is None
    assert (default.ranker("session_cap"), default.ranker_names) == (None, ())
    with pytest.raises(ValueError, match="session_cap"):
        SearchOptions.of(session_cap=0)
    with pytest.raises(ValueError, match="decay"):
        SecondRound(decay=1.5)
    doc = {
        "systems": [
            {
                "name": "m",
                "strategy": "message",
                "options": {"second_round": {"seeds": 3, "decay": 0.5, "k": 60}, "session_cap": 2},
            }
        ]
    }
    system = parse_experiment(doc, "x.toml").systems[0]
    assert (system.options.retrieval.second_round, system.options.ranker("session_cap")) == (
        SecondRound(),
        SessionCap(2),
    )
    with pytest.raises(ValueError, match="second_round"):
        parse_experiment(
            {
                "systems": [
                    {"name": "m", "strategy": "message", "options": {"second_round": {"hops": 2}}}
                ]
            },
            "x.toml",
        )
