"""Resurrection: seeds/003's budget-accounting examples reproduced exactly."""

from __future__ import annotations

import polars as pl
import pytest

from convlab import schema
from convlab.resurrection import budget_measures, normalize_answer, resurrect
from tests.helpers import chunks_frame

# turn 29/30 of seeds/003 become one convlab turn: user S0 (120), assistant S0 (80), S5 (150)
CHUNKS = chunks_frame(
    [
        (0, 0, "user", 0, 0, "How does brightness scoring work?", 120),
        (0, 1, "assistant", 0, 0, "Brightness scoring uses magnitude voting.", 80),
        (0, 1, "assistant", 5, 1, "Scores are capped at 10000.", 150),
        (1, 2, "user", 0, 0, "And the decay?", 30),
    ]
)
U = schema.frame(
    [
        {
            "unit_id": "s5",
            "chunk_ids": ["c:t0:user:s0", "c:t0:assistant:s0", "c:t0:assistant:s5"],
            "target_chunk_id": "c:t0:assistant:s5",
        },
        {
            "unit_id": "a0",
            "chunk_ids": ["c:t0:user:s0", "c:t0:assistant:s0"],
            "target_chunk_id": "c:t0:assistant:s0",
        },
        {"unit_id": "u0", "chunk_ids": ["c:t0:user:s0"], "target_chunk_id": "c:t0:user:s0"},
        {"unit_id": "d", "chunk_ids": ["c:t1:user:s0"], "target_chunk_id": "c:t1:user:s0"},
    ],
    schema.UNITS,
)


def hits(*units: str) -> pl.DataFrame:
    return pl.DataFrame({"rank": list(range(1, len(units) + 1)), "unit_id": list(units)})


def test_example_1_three_chunks_cost_350() -> None:
    r = resurrect(["s5"], 1000, units=U, chunks=CHUNKS)
    assert r.tokens_used == 150 + 120 + 80
    assert r.context["chunk_id"].to_list() == [
        "c:t0:user:s0",
        "c:t0:assistant:s0",
        "c:t0:assistant:s5",
    ]
    assert r.context["is_target"].to_list() == [False, False, True]


def test_example_2_s0_target_costs_200() -> None:
    assert resurrect(["a0"], 1000, units=U, chunks=CHUNKS).tokens_used == 80 + 120


def test_example_3_alive_chunks_are_free() -> None:
    # the question (120) is alive already: the hit costs 150 + 80 = 230
    r = resurrect(["u0", "s5"], 1000, units=U, chunks=CHUNKS)
    assert r.tokens_used == 120 + 230
    assert r.redundancy == pytest.approx(120 / (120 + 350))


def test_a_hit_that_does_not_fit_is_skipped_and_the_walk_goes_on() -> None:
    r = resurrect(["s5", "d"], 300, units=U, chunks=CHUNKS)
    assert r.hits_skipped == [1]
    assert r.hits_used == [2]
    assert r.tokens_used == 30


def test_budget_measures() -> None:
    queries = schema.frame(
        [{"query_id": "q", "text": "x", "relevant": ["c:t0"], "answer": "capped at 10,000"}],
        schema.QUERIES,
    )
    h = hits("s5", "d").with_columns(pl.lit("q").alias("query_id"))
    m = budget_measures(h, queries, units=U, chunks=CHUNKS, budgets=[100, 350, 400])
    rows = {r["budget"]: r for r in m.iter_rows(named=True)}
    assert rows[100]["coverage"] == 0.0
    assert rows[100]["tokens_used"] == 30
    assert rows[350]["coverage"] == 1.0
    assert rows[350]["answer_contained"] == 1.0  # "10,000" and "10000." normalise alike
    assert rows[400]["tokens_used"] == 380
    assert normalize_answer("The  Capped, at 10000!") == "capped at 10000"


def test_evidence_token_recall_gives_partial_credit() -> None:
    # a0 brings back user S0 (120) + assistant S0 (80) of turn 0, whose three chunks hold 350
    queries = schema.frame(
        [{"query_id": "q", "text": "x", "relevant": ["c:t0"], "answer": None}], schema.QUERIES
    )
    h = hits("a0").with_columns(pl.lit("q").alias("query_id"))
    m = budget_measures(h, queries, units=U, chunks=CHUNKS, budgets=[199, 200])
    rows = {r["budget"]: r for r in m.iter_rows(named=True)}
    assert rows[199]["evidence_token_recall"] == 0.0
    assert rows[200]["coverage"] == 0.0  # strict: the turn is not whole
    assert rows[200]["evidence_token_recall"] == pytest.approx(200 / 350)


def test_an_answer_spanning_two_chunks_is_found_in_conversation_order() -> None:
    queries = schema.frame(
        [{"query_id": "q", "text": "x", "relevant": ["c:t0"], "answer": "voting. Scores are"}],
        schema.QUERIES,
    )
    # the walk brings S5 back before the S0s: joined in walk order the answer is not there
    s5_alone = {"unit_id": "s5-alone", "chunk_ids": ["c:t0:assistant:s5"], "target_chunk_id": ""}
    units = pl.concat([U, schema.frame([s5_alone], schema.UNITS)])
    h = hits("s5-alone", "a0").with_columns(pl.lit("q").alias("query_id"))
    m = budget_measures(h, queries, units=units, chunks=CHUNKS, budgets=[400])
    assert m["answer_contained"].to_list() == [1.0]


def test_grid_maps_a_ranked_doc_to_the_unit_that_can_have_ranked_it() -> None:
    from convlab.studies.resurrection_grid import map_hits

    units = pl.DataFrame(
        {
            "unit_id": ["w1", "w2", "s3", "a4", "b4"],
            "doc_ids": [["m1", "m2"], ["m2", "m3"], ["m3"], ["m4"], ["m4"]],
        }
    )
    run = pl.DataFrame(
        {"query_id": ["q"] * 4, "doc_id": ["m3", "m2", "m1", "m4"], "rank": [1, 2, 3, 4]}
    )
    hits, counts = map_hits(run, units)
    # m3 (rank 1): w2 would need m2 at rank <= 1, so s3; m2 (rank 2): w1 would need m1 <= 2, so
    # w2 (m3 ranks 1); m1: w1 (m2 ranks 2); m4: a4 and b4 both fit, the first is taken
    assert hits.select("rank", "unit_id", "doc_id").rows() == [
        (1, "s3", "m3"),
        (2, "w2", "m2"),
        (3, "w1", "m1"),
        (4, "a4", "m4"),
    ]
    assert counts == {"hits": 4, "ambiguous": 1, "unmapped": 0}
    with pytest.raises(ValueError, match="ranked doc 'm9' has no unit"):
        map_hits(pl.DataFrame({"query_id": ["q"], "doc_id": ["m9"], "rank": [1]}), units)


def _walk_reference(
    ranked: list[tuple[int, list[list[str]]]], budget: int, tokens: dict[str, int]
) -> tuple[dict[str, int], int, int, list[int], list[int], int]:
    """The budget walk's rule as first written (chunk by chunk, nothing prepared)."""
    alive: dict[str, int] = {}
    used = offered = pieces_skipped = 0
    hits_used: list[int] = []
    skipped: list[int] = []
    for rank, pieces in ranked:
        for i, piece in enumerate(pieces):
            ids = list(dict.fromkeys(piece))
            cost = sum(tokens[c] for c in ids if c not in alive)
            if used + cost > budget:
                if i == 0:
                    skipped.append(rank)
                    break
                pieces_skipped += 1
                continue
            offered += sum(tokens[c] for c in ids)
            for c in ids:
                alive.setdefault(c, rank)
            used += cost
            if i == 0:
                hits_used.append(rank)
    return alive, used, offered, hits_used, skipped, pieces_skipped


def test_the_walk_matches_its_rule_on_random_hits() -> None:
    import numpy as np

    from convlab.resurrection import walk

    rng = np.random.default_rng(3)
    tokens = {f"c{i}": int(rng.integers(1, 60)) for i in range(20)}
    for _ in range(300):
        ranked = [
            (
                rank,
                [
                    [f"c{c}" for c in rng.integers(0, 20, size=int(rng.integers(1, 4)))]
                    for _ in range(int(rng.integers(1, 3)))
                ],
            )
            for rank in range(1, int(rng.integers(1, 15)))
        ]
        budget = int(rng.integers(0, 300))
        w = walk(ranked, budget, tokens)
        alive, used, offered, hits_used, skipped, pieces_skipped = _walk_reference(
            ranked, budget, tokens
        )
        assert list(w.alive.items()) == list(alive.items())  # the same chunks, in walk order
        assert (w.used, w.offered, w.pieces_skipped) == (used, offered, pieces_skipped)
        assert (w.hits_used, w.hits_skipped) == (hits_used, skipped)


@pytest.mark.parametrize(
    "texts",
    [
        ["The cat.", "A dog", "an"],  # articles at both ends of a chunk
        ["...", "", "  Hello,  World  "],  # chunks that normalise to nothing, spaces
        ["ΟΔΟΣ", "ΣΑΣ ΑΣ"],  # a final sigma before the space between chunks
        ["don't", "the-end", "x"],  # punctuation inside words
    ],
)
def test_each_chunk_normalised_alone_gives_the_normalised_context(texts: list[str]) -> None:
    from convlab.resurrection.shared import Shared, context_text

    chunks = chunks_frame([(i, i, "user", 0, 0, t, 5) for i, t in enumerate(texts)])
    ids = chunks["chunk_id"].to_list()
    memo = Shared.of(U, chunks)
    alive = {c: 1 for c in reversed(ids)}  # walk order is not conversation order
    assert context_text(alive, memo, normalize_answer) == normalize_answer(" ".join(texts))
    assert context_text({}, memo, normalize_answer) == ""


def test_look_ups_made_once_are_passed_in_and_are_what_is_read() -> None:
    from convlab.resurrection import Shared

    queries = schema.frame(
        [{"query_id": "q", "text": "x", "relevant": ["c:t0"], "answer": "capped at 10,000"}],
        schema.QUERIES,
    )
    h = hits("s5", "d").with_columns(pl.lit("q").alias("query_id"))
    made = Shared.of(U, CHUNKS)
    assert made.texts["c:t1:user:s0"] == "And the decay?"
    assert made.order["c:t1:user:s0"] == 3
    own = budget_measures(h, queries, units=U, chunks=CHUNKS, budgets=[350])
    given = budget_measures(h, queries, units=U, chunks=CHUNKS, budgets=[350], shared=made)
    assert given.equals(own)
    assert own["answer_contained"].to_list() == [1.0]
    # the look-ups given are the ones read: chunks whose text lacks the answer find none
    other = CHUNKS.with_columns(pl.lit("nothing here").alias("text"))
    blind = budget_measures(
        h, queries, units=U, chunks=CHUNKS, budgets=[350], shared=Shared.of(U, other)
    )
    assert blind["answer_contained"].to_list() == [0.0]
    assert blind["coverage"].to_list() == own["coverage"].to_list()
