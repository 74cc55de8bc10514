"""A resurrected context as prompt text and as pandas; each hit's part of it (`search --budget`)."""

from __future__ import annotations

import polars as pl

from convlab import schema
from convlab.resurrection import resurrect
from convlab.resurrection.render import hit_contexts
from tests.helpers import chunks_frame

# one turn of a dialog: Ann asks (message 0), Bo answers in two chunks (message 1); a second
# turn: Ann again (message 2)
CHUNKS = chunks_frame(
    [
        (0, 0, "user", 0, 0, "Where did you go?", 5),
        (0, 1, "assistant", 0, 0, "To Lisbon.", 4),
        (0, 1, "assistant", 1, 1, "It rained.", 3),
        (1, 2, "user", 0, 0, "Nice.", 2),
        (1, 3, "assistant", 0, 0, "Yes.", 2),
    ],
    doc_kind="message",
)
MESSAGES = schema.frame(
    [
        {"conversation_id": "c", "message_index": i, "speaker": who, "source_path": "d.json"}
        | {"source_line": 10 + i}
        for i, who in enumerate(["Ann", "Bo", "Ann", "Bo"])
    ],
    schema.MESSAGES,
)
UNITS = schema.frame(
    [
        {  # Bo's second chunk, embedded with the question and Bo's first chunk
            "unit_id": "rain",
            "chunk_ids": ["c:t0:user:s0", "c:t0:assistant:s0", "c:t0:assistant:s1"],
            "target_chunk_id": "c:t0:assistant:s1",
            "doc_ids": ["c:m1"],
        },
        {
            "unit_id": "yes",
            "chunk_ids": ["c:t1:assistant:s0"],
            "target_chunk_id": "c:t1:assistant:s0",
            "doc_ids": ["c:m3"],
        },
    ],
    schema.UNITS,
)


def test_text_names_speaker_time_and_source_line_per_message() -> None:
    r = resurrect(["rain"], 100, units=UNITS, chunks=CHUNKS, messages=MESSAGES)
    assert r.text() == (
        "[c · turn 0 · 2026-01-01 00:00 · Ann · d.json:10]\n"
        "Where did you go?\n"
        "[c · turn 0 · 2026-01-01 00:00 · Bo · d.json:11]\n"
        "To Lisbon. It rained."
    )


def test_text_marks_gaps_and_falls_back_to_the_role_without_messages() -> None:
    # "yes" (message 3) then "rain": message 2 lies between them and is left out
    r = resurrect(["yes", "rain"], 100, units=UNITS, chunks=CHUNKS)
    assert r.context["speaker"].to_list() == [None] * 4
    assert r.text().splitlines() == [
        "[c · turn 0 · 2026-01-01 00:00 · user]",
        "Where did you go?",
        "[c · turn 0 · 2026-01-01 00:00 · assistant]",
        "To Lisbon. It rained.",
        "[…]",
        "[c · turn 1 · 2026-01-01 00:00 · assistant]",
        "Yes.",
    ]


def test_to_pandas_is_the_context_frame() -> None:
    r = resurrect(["rain"], 100, units=UNITS, chunks=CHUNKS, messages=MESSAGES)
    df = r.to_pandas()
    assert list(df.columns) == list(schema.CONTEXT)
    assert df["text"].tolist() == ["Where did you go?", "To Lisbon.", "It rained."]
    assert df["source_line"].tolist() == [10, 11, 11]


def test_doc_ids_pick_the_doc_of_a_hit() -> None:
    # the doc policy brings back the doc the hit names: message 0 (5 tokens), not the unit's
    r = resurrect(["rain"], 100, units=UNITS, chunks=CHUNKS, policy="doc", doc_ids=["c:m0"])
    assert r.context["chunk_id"].to_list() == ["c:t0:user:s0"]
    assert r.tokens_used == 5


def test_each_hit_gets_the_chunks_it_brought_back_first() -> None:
    # budget 14: "rain" costs 5 + 4 + 3 = 12; "yes" (2) fits the 2 left; a third hit repeating
    # "rain" brings nothing new
    r = resurrect(["rain", "yes", "rain"], 14, units=UNITS, chunks=CHUNKS, messages=MESSAGES)
    first, second, third = hit_contexts(r, 3)
    assert [p["text"] for p in first["pieces"]] == ["Where did you go?", "To Lisbon. It rained."]
    assert [p["speaker"] for p in first["pieces"]] == ["Ann", "Bo"]
    assert (first["tokens"], second["tokens"], third["tokens"]) == (12, 2, 0)
    assert second["pieces"][0]["source_line"] == 13
    assert third["pieces"] == []
    assert not any(h["skipped"] for h in (first, second, third))
    # budget 13: "yes" no longer fits after "rain"
    r = resurrect(["rain", "yes"], 13, units=UNITS, chunks=CHUNKS)
    assert [h["skipped"] for h in hit_contexts(r, 2)] == [False, True]


def test_an_empty_context_renders_as_nothing() -> None:
    r = resurrect(["rain"], 1, units=UNITS, chunks=CHUNKS)
    assert r.text() == ""
    assert r.context.schema == pl.Schema(schema.CONTEXT)
