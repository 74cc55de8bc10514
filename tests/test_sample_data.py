"""The bundled sample corpus: loads strictly, and its labels point at real turns."""

from __future__ import annotations

import polars as pl

from convlab.evaluation.datasets import sample
from convlab.pipeline.chunks import chunks
from convlab.pipeline.turns import turns
from convlab.resurrection import normalize_answer


def test_sample_loads_strictly_and_labels_are_valid() -> None:
    d = sample()
    c = d.corpus
    assert c.report.n_skipped == 0
    assert c.conversations.height == 20
    assert set(c.conversations["source_format"]) == {"claude_code", "amplifier"}
    t = turns(c)
    ids = set(t["turn_id"])
    q = d.queries
    assert 55 <= q.height <= 70
    assert q["query_id"].is_unique().all()
    assert set(q["category"]) == {"single-hop", "multi-hop", "temporal", "paraphrase", "tool-usage"}
    assert all(set(r) <= ids for r in q["relevant"].to_list())
    s = chunks(c).group_by("conversation_id", "turn_index").agg(pl.col("text").str.join(" "))
    text = {f"{a}:t{b}": normalize_answer(x) for a, b, x in s.iter_rows()}
    for rel, ans in (
        q.filter(pl.col("answer").is_not_null()).select("relevant", "answer").iter_rows()
    ):
        assert any(normalize_answer(ans) in text[r] for r in rel), ans
