"""``unit_costs``: units, units per message, distinct texts and tokens embedded, by hand."""

from __future__ import annotations

import polars as pl
import pytest

from convlab.pipeline.unit_costs import messages_with_text, unit_costs
from tests.helpers import chunks_frame


def frame(*rows: tuple[str, int]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"text": pl.String, "n_tokens": pl.Int64}, orient="row")


def test_costs_by_hand() -> None:
    # a: three units, two texts ("x" twice: 5 + 7 tokens); b: two units, "x" again and "z"
    # (5 + 9); c: BM25 only, nothing embedded. All: the texts x, y, z once = 5 + 7 + 9 = 21.
    units = {
        "a": frame(("x", 5), ("x", 5), ("y", 7)),
        "b": frame(("x", 5), ("z", 9)),
        "c": frame(("w", 3)),
    }
    got = unit_costs(units, 4, dense={"a", "b"})
    assert got.rows() == [
        ("a", 3, 0.75, 2, 12),
        ("b", 2, 0.5, 2, 14),
        ("c", 1, 0.25, 1, 0),
        ("all", 6, 1.5, 3, 21),
    ]
    assert unit_costs(units, 0, total="every").row(3) == ("every", 6, 0.0, 4, 24)


def test_messages_with_text_counts_each_message_once() -> None:
    rows = [
        (0, 0, "user", 0, 0, "U0", 1),
        (0, 0, "user", 1, 1, "U1", 1),
        (0, 1, "assistant", 0, 0, "A0", 1),
    ]
    assert messages_with_text(chunks_frame(rows)) == 2
    assert messages_with_text(chunks_frame(rows).clear()) == 0


def test_corpus_costs_count_each_strategys_units_and_a_replys() -> None:
    from convlab.evaluation.config import EvalConfig
    from convlab.evaluation.datasets import load_labelled
    from convlab.pipeline.chunks import chunks
    from convlab.pipeline.unit_costs import corpus_unit_costs
    from convlab.pipeline.units import units

    corpus = load_labelled(None).corpus
    policy = EvalConfig().policy
    table = corpus_unit_costs(corpus, ["isolated", "isolated_window"], policy=policy)
    rows = {r["strategy"]: r for r in table.to_dicts()}
    assert list(rows) == ["isolated", "isolated_window", "all"]
    ch = chunks(corpus, policy)
    replies = ch.filter(pl.col("role") == "assistant").select("conversation_id", "message_index")
    for name in ("isolated", "isolated_window"):
        u = units(ch, name)
        assert rows[name]["units"] == u.height
        assert rows[name]["units_per_assistant_message"] == (
            u.filter(pl.col("role") == "assistant").height / replies.n_unique()
        )
    assert rows["all"]["units"] == rows["isolated"]["units"] + rows["isolated_window"]["units"]
    assert rows["all"]["units_per_assistant_message"] is None
    with pytest.raises(ValueError, match="unknown strategy 'nope'"):
        corpus_unit_costs(corpus, ["nope"])
