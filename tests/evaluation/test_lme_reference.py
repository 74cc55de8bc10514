"""The official protocol reproduces LongMemEval's flat-BM25 reference on its oracle file.

The expected figures are the table of ``../shared/datasets/longmemeval/README.md`` (the official
code, rank_bm25's ``BM25Okapi`` on text split on one space), to within 0.005.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from convlab.evaluation.lme_bm25 import flat_bm25
from convlab.evaluation.lme_official import (
    OfficialLabels,
    averages,
    official_measures,
    read_official,
    with_doc_ids,
)
from convlab.loaders.longmemeval import read_longmemeval

COLUMNS = (
    "recall_all@5",
    "ndcg_any@5",
    "recall_all@10",
    "ndcg_any@10",
    "recall_any@5",
    "recall_any@10",
)
# granularity, average, n: the README's row
README = {
    ("turn", "strict", 419): (0.7064, 0.7297, 0.8854, 0.7758, 0.9403, 0.9976),
    ("turn", "non_abstention", 470): (0.7383, 0.6505, 0.8979, 0.6916, 0.8383, 0.8894),
    ("session", "strict", 419): (0.9928, 0.9946, 1.0000, 0.9946, 1.0000, 1.0000),
}


@pytest.fixture(scope="module")
def labels(longmemeval_oracle: Path) -> OfficialLabels:
    return read_official(longmemeval_oracle)


def _means(labels: OfficialLabels, granularity: str) -> dict[tuple[str, int], dict[str, float]]:
    keys = labels.turns if granularity == "turn" else labels.sessions
    measured = official_measures(flat_bm25(keys, labels.questions), turns=granularity == "turn")
    out: dict[tuple[str, int], dict[str, float]] = {}
    summary = averages(measured.filter(pl.col("level") == granularity), labels.questions)
    for r in summary.iter_rows(named=True):
        out.setdefault((r["average"], r["queries"]), {})[r["metric"]] = r["mean"]
    return out


@pytest.mark.parametrize("granularity", ["turn", "session"])
def test_flat_bm25_reproduces_the_readme_table(labels: OfficialLabels, granularity: str) -> None:
    means = _means(labels, granularity)
    for (level, average, n), expected in README.items():
        if level != granularity:
            continue
        got = means[(average, n)]
        for column, value in zip(COLUMNS, expected, strict=True):
            assert got[column] == pytest.approx(value, abs=0.005), (level, average, column)


def test_the_oracle_has_the_readme_counts(labels: OfficialLabels) -> None:
    q = labels.questions
    assert q.height == 500
    assert q.filter(~pl.col("abstention")).height == 470
    assert labels.strict().height == 419
    # the 51 non-abstention questions left out of strict are those without gold turn keys
    gold = labels.turns.filter(pl.col("gold"))["query_id"].unique()
    assert q.filter(~pl.col("abstention") & ~pl.col("query_id").is_in(gold.to_list())).height == 51


def test_every_official_key_is_the_message_of_the_same_text(
    labels: OfficialLabels, longmemeval_oracle: Path
) -> None:
    corpus, _ = read_longmemeval(longmemeval_oracle)
    turns = with_doc_ids(labels, corpus.messages).turns
    text = corpus.blocks.select(
        pl.format("{}:m{}", "conversation_id", "message_index").alias("doc_id"),
        pl.col("text").alias("doc_text"),
    )
    joined = turns.join(text, on="doc_id", how="left")
    assert joined["doc_id"].null_count() == 0
    assert joined.filter(pl.col("text") != pl.col("doc_text")).height == 0


def test_the_reference_in_score_official_reproduces_the_readme_session_row(
    labels: OfficialLabels,
) -> None:
    """The session keys level of an evaluation's official scores is the README's session row."""
    from convlab.evaluation.lme_scores import SESSION_KEYS, score_official

    strict = labels.select(labels.strict()["query_id"].to_list())
    scores = score_official({}, strict, baseline="flat-bm25 (official)", reference=True)
    part = scores.summary.filter(
        (pl.col("level") == SESSION_KEYS) & (pl.col("average") == "strict")
    )
    got = dict(part.select("metric", "mean").iter_rows())
    assert part["queries"].max() == 419
    expected = README[("session", "strict", 419)]
    for column, value in zip(COLUMNS, expected, strict=True):
        assert got[column] == pytest.approx(value, abs=0.005), column
