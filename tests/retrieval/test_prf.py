"""RM3 pseudo-relevance feedback: the relevance model by hand, the off switch, the config.

The toy index (bm25s, Lucene BM25, k1 1.5, b 0.75, no (k1 + 1) factor), three units:
d0 "cat dog" (2 terms), d1 "cat cat fish" (3 terms), d2 "bird" (1 term); avgdl = 6 / 3 = 2.

Query "cat", first pass: idf(cat) = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln 1.6;
d0: 1 / (1 + 1.5 * (0.25 + 0.75 * 2/2)) = 1 / 2.5 = 26/65;
d1: 2 / (2 + 1.5 * (0.25 + 0.75 * 3/2)) = 2 / 4.0625 = 32/65; d2: 0 (left out).
P(d|q) = score / sum: d0 26/58 = 13/29, d1 16/29.
P(t|d): d0 cat 1/2, dog 1/2; d1 cat 2/3, fish 1/3.
P(cat|R) = 13/29 * 1/2 + 16/29 * 2/3 = 103/174; P(dog|R) = 39/174; P(fish|R) = 32/174.
fb_terms 2 keeps cat and dog, renormalised over 142/174: cat 103/142, dog 39/142.
RM3 with original_weight 0.5: cat 0.5 * 1 + 0.5 * 103/142 = 245/284; dog 0.5 * 39/142 = 39/284.
Second pass: idf(dog) = ln(1 + (3 - 1 + 0.5) / (1 + 0.5)) = ln(8/3), its d0 part 26/65 like cat's;
d0 = 245/284 * ln 1.6 * 26/65 + 39/284 * ln(8/3) * 26/65; d1 = 245/284 * ln 1.6 * 32/65.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from convlab.index.bm25 import BM25Index
from convlab.protocols import Query
from convlab.retrieval import SearchOptions
from convlab.retrieval.prf import PRF, expand, relevance_model
from convlab.retrieval.retrievers import LexicalRetriever
from convlab.systems.experiment import parse_experiment
from convlab.systems.system import System

TEXTS = ["cat dog", "cat cat fish", "bird"]


@pytest.fixture(scope="module")
def bm25() -> BM25Index:
    return BM25Index.build(pl.DataFrame({"text": TEXTS}))


def _query(text: str) -> Query:
    return Query(text, np.zeros(1, dtype=np.float32))


def test_relevance_model_by_hand() -> None:
    docs = [["cat", "dog"], ["cat", "cat", "fish"]]
    rm = relevance_model(docs, [26 / 65, 32 / 65], fb_terms=3)
    assert rm == pytest.approx({"cat": 103 / 174, "dog": 39 / 174, "fish": 32 / 174})
    assert list(relevance_model(docs, [26 / 65, 32 / 65], fb_terms=2)) == ["cat", "dog"]


def test_expanded_query_on_the_toy_index(bm25: BM25Index) -> None:
    scores, rows = bm25.search("cat", 10)
    assert rows.tolist() == [1, 0]
    ln16 = math.log(1.6)
    assert scores.tolist() == pytest.approx([ln16 * 32 / 65, ln16 * 26 / 65], rel=1e-5)
    docs = [bm25.terms(TEXTS[r]) for r in rows]
    weights = expand(bm25.terms("cat"), docs, scores.tolist(), PRF(fb_docs=2, fb_terms=2))
    assert weights == pytest.approx({"cat": 245 / 284, "dog": 39 / 284}, rel=1e-5)


def test_second_pass_scores_by_hand(bm25: BM25Index) -> None:
    found = LexicalRetriever(bm25, PRF(fb_docs=2, fb_terms=2), TEXTS).search(
        _query("cat"), 10, None
    )
    ln16, ln83 = math.log(1.6), math.log(8 / 3)
    d0 = 245 / 284 * ln16 * 26 / 65 + 39 / 284 * ln83 * 26 / 65
    d1 = 245 / 284 * ln16 * 32 / 65
    assert found.rows.tolist() == [0, 1]  # the feedback term "dog" lifts d0 above d1
    assert found.scores.tolist() == pytest.approx([d0, d1], rel=1e-5)


def test_feedback_stays_inside_rows(bm25: BM25Index) -> None:
    found = LexicalRetriever(bm25, PRF(fb_docs=2, fb_terms=2), TEXTS).search(
        _query("cat"), 10, np.array([1, 2])
    )
    assert found.rows.tolist() == [1]


def test_no_prf_is_plain_bm25(bm25: BM25Index) -> None:
    assert SearchOptions().retrieval.prf is None
    plain = LexicalRetriever(bm25).search(_query("cat fish"), 10, None)
    scores, rows = bm25.search("cat fish", 10)
    assert plain.rows.tolist() == rows.tolist()
    assert plain.scores.tolist() == scores.tolist()
    # all weight on the original query: the ranking of plain BM25, the scores halved (2 terms)
    kept = LexicalRetriever(bm25, PRF(original_weight=1.0), TEXTS).search(
        _query("cat fish"), 10, None
    )
    assert kept.rows.tolist() == rows.tolist()
    assert kept.scores.tolist() == pytest.approx((scores / 2).tolist(), rel=1e-5)


@pytest.mark.parametrize(
    "bad",
    [
        {"fb_docs": 0},
        {"fb_terms": 1001},
        {"fb_docs": 2.5},
        {"fb_docs": True},
        {"original_weight": 1.5},
        {"original_weight": -0.1},
        {"original_weight": "0.5"},
    ],
)
def test_config_is_validated(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="prf"):
        PRF(**bad)  # type: ignore[arg-type]


def test_options_take_plain_data() -> None:
    options = SearchOptions.of(prf={"fb_docs": 5})  # type: ignore[arg-type]
    assert options.retrieval.prf == PRF(fb_docs=5, fb_terms=10, original_weight=0.5)
    assert options.replace(k=3).retrieval.prf == options.retrieval.prf
    with pytest.raises(ValueError, match=r"unknown key.*docs.*valid: fb_docs"):
        SearchOptions.of(prf={"docs": 5})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="texts"):
        LexicalRetriever(BM25Index.build(pl.DataFrame({"text": TEXTS})), PRF())


def test_experiment_file_round_trip() -> None:
    table = {
        "name": "bm25:message+rm3",
        "strategy": "message",
        "retrieval": "lexical",
        "options": {"prf": {"fb_docs": 5, "fb_terms": 20, "original_weight": 0.7}},
    }
    (system,) = parse_experiment({"systems": [table]}, "x.toml").systems
    assert system.options.retrieval.prf == PRF(fb_docs=5, fb_terms=20, original_weight=0.7)
    assert system.as_dict() == table
    assert System.from_dict(system.as_dict()) == system
    bad = {**table, "options": {"prf": {"fb_docs": 0}}}
    with pytest.raises(ValueError, match=r"x.toml: systems\[0\].options.prf.fb_docs"):
        parse_experiment({"systems": [bad]}, "x.toml")
    bad = {**table, "options": {"prf": {"docs": 5}}}
    with pytest.raises(ValueError, match="unknown key 'docs'; valid: fb_docs"):
        parse_experiment({"systems": [bad]}, "x.toml")
