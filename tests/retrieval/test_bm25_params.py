"""BM25's k1 and b as a search option: scores by hand, the index kept per parameters, the config.

Three documents (stemmed, stopwords out): d0 "cat", d1 "cat dog bird fish", d2 "dog".
N = 3, df(cat) = 2: idf(cat) = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6); avgdl = 6 / 3 = 2.
BM25 (Lucene): idf * tf / (tf + k1 * (1 - b + b * |d| / avgdl)).

- k1 1.5, b 0.75 (bm25s's defaults): d0 ln(1.6) / (1 + 1.5 * 0.625) = ln(1.6) / 1.9375;
  d1 ln(1.6) / (1 + 1.5 * 1.75) = ln(1.6) / 3.625; d2 0.
- b 0 (no length normalisation): d0 and d1 both ln(1.6) / (1 + 1.5) = ln(1.6) / 2.5.
- k1 0, b 0.75: every matching doc ln(1.6) (a term counts once).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from convlab import schema
from convlab.embed import HashEmbedder
from convlab.index import VectorIndex
from convlab.index.bm25 import BM25Index, BM25Params
from convlab.retrieval import SearchOptions
from convlab.retrieval.search import search_many
from convlab.systems.experiment import parse_experiment
from convlab.systems.system import System

TEXTS = ["cat", "cat dog bird fish", "dog"]
IDF = math.log(1.6)


@pytest.fixture(scope="module")
def index() -> VectorIndex:
    units = schema.frame(
        [
            {
                "unit_id": f"u{i}",
                "text": t,
                "doc_ids": [f"d{i}"],
                "chunk_ids": [],
                "conversation_id": "c",
                "turn_index": i,
                "role": "user",
            }
            for i, t in enumerate(TEXTS)
        ],
        schema.UNITS,
    )
    return VectorIndex.build(units, np.eye(3, dtype=np.float32), model_id="toy")


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (BM25Params(), [IDF / 1.9375, IDF / 3.625, 0.0]),
        (BM25Params(b=0.0), [IDF / 2.5, IDF / 2.5, 0.0]),
        (BM25Params(k1=0.0), [IDF, IDF, 0.0]),
    ],
)
def test_scores_by_hand(params: BM25Params, expected: list[float]) -> None:
    bm25 = BM25Index.of_texts(TEXTS, params)
    assert bm25.params == params
    assert bm25.scores("cat") == pytest.approx(expected, rel=1e-5)


def test_reparametrized_is_made_once_and_the_own_parameters_are_the_index() -> None:
    bm25 = BM25Index.of_texts(TEXTS)
    assert bm25.reparametrized(BM25Params(), TEXTS) is bm25
    flat = bm25.reparametrized(BM25Params(b=0.0), TEXTS)
    assert flat is bm25.reparametrized(BM25Params(b=0.0), TEXTS)
    assert flat.scores("cat") == pytest.approx([IDF / 2.5, IDF / 2.5, 0.0], rel=1e-5)
    with pytest.raises(ValueError, match="BM25 over 3 documents given 2 texts"):
        bm25.reparametrized(BM25Params(b=0.0), TEXTS[:2])


def test_saved_parameters_come_back(tmp_path: object) -> None:
    from pathlib import Path

    folder = Path(str(tmp_path)) / "bm25"
    BM25Index.of_texts(TEXTS, BM25Params(k1=0.9, b=0.3)).save(folder)
    assert BM25Index.load(folder).params == BM25Params(k1=0.9, b=0.3)


def test_the_option_reaches_the_lexical_search(index: VectorIndex) -> None:
    bm25 = BM25Index.build(index.units)
    queries = pl.DataFrame({"query_id": ["q"], "text": ["cat"]})

    def run(**more: object) -> pl.DataFrame:
        options = SearchOptions.of(retrieval="lexical", k=3, **more)  # type: ignore[arg-type]
        return search_many(index, queries, embedder=HashEmbedder(3), options=options, bm25=bm25)

    default, flat = run(), run(bm25={"b": 0.0})
    assert default["doc_id"].to_list() == ["d0", "d1"]
    assert default["score"].to_list() == pytest.approx([IDF / 1.9375, IDF / 3.625], rel=1e-5)
    assert flat["score"].to_list() == pytest.approx([IDF / 2.5, IDF / 2.5], rel=1e-5)


@pytest.mark.parametrize("bad", [{"k1": -0.1}, {"b": 1.5}, {"b": "0.3"}, {"k1": True}])
def test_config_is_validated(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="bm25"):
        BM25Params(**bad)  # type: ignore[arg-type]


def test_experiment_file_round_trip() -> None:
    table = {
        "name": "bm25:message+k1b",
        "strategy": "message",
        "retrieval": "lexical",
        "options": {"bm25": {"k1": 0.9, "b": 0.3}},
    }
    (system,) = parse_experiment({"systems": [table]}, "x.toml").systems
    assert system.options.retrieval.bm25 == BM25Params(k1=0.9, b=0.3)
    assert system.as_dict() == table
    assert System.from_dict(system.as_dict()) == system
    bad = {**table, "options": {"bm25": {"b": 2}}}
    with pytest.raises(ValueError, match=r"x.toml: systems\[0\].options.bm25.b"):
        parse_experiment({"systems": [bad]}, "x.toml")
    bad = {**table, "options": {"bm25": {"k": 2}}}
    with pytest.raises(ValueError, match="unknown key 'k'; valid: k1, b"):
        parse_experiment({"systems": [bad]}, "x.toml")


def test_a_view_carries_its_own_parameters() -> None:
    from convlab.systems.hits import view_options
    from convlab.systems.system import View

    view = View.parse("bm25(k1=0.9,b=0.2):message")
    assert (view.strategy, view.bm25) == ("message", BM25Params(k1=0.9, b=0.2))
    assert view.name == "bm25(k1=0.9,b=0.2):message"
    assert View.parse(view.name) == view
    system = System(
        name="f",
        views=(view, "bm25:sequential", "sequential"),
        weights=(1, 1, 1),
        options=SearchOptions.of(bm25={"k1": 2.0, "b": 0.5}),  # type: ignore[arg-type]
    )
    # the view's own parameters win; other lexical views keep the system's
    assert [view_options(system, v, 50).retrieval.bm25 for v in system.views] == [
        BM25Params(k1=0.9, b=0.2),
        BM25Params(k1=2.0, b=0.5),
        BM25Params(k1=2.0, b=0.5),
    ]
    assert System.from_dict(system.as_dict()) == system


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("bm25(k1=0.9):message", r"write BM25 parameters as bm25\(k1=K,b=B\):STRATEGY"),
        ("bm25(k1=0.9,b=2):message", r"bm25.b must be a number in \[0, 1\]"),
        ("dense(k1=1,b=0):message", "BM25 parameters need a lexical view"),
    ],
)
def test_bad_view_parameters_are_named(name: str, error: str) -> None:
    from convlab.systems.system import View

    with pytest.raises(ValueError, match=error):
        View.parse(name)
