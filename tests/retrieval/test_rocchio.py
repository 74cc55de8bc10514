"""Rocchio feedback in the dense space: the moved query by hand, the off switch, the config.

Three unit vectors in 2-d: u0 = (1, 0), u1 = (0.6, 0.8), u2 = (0, 1); the query q = (0.8, 0.6).
First pass (cosines): u0 0.8, u1 0.96, u2 0.6, so u1 is the top unit.

Rocchio(fb_docs=1, alpha=1, beta=2) over the whole index: feedback u1, so
q' = (0.8 + 2 * 0.6, 0.6 + 2 * 0.8) = (2.0, 2.2), |q'| = sqrt(8.84);
second pass: u0 2.0 / sqrt(8.84), u1 (1.2 + 1.76) / sqrt(8.84) = 2.96 / sqrt(8.84),
u2 2.2 / sqrt(8.84): the order u1, u2, u0 (u2 overtakes u0).

The same inside rows [0, 2]: the first pass's top unit there is u0, so
q' = (0.8 + 2 * 1, 0.6 + 0) = (2.8, 0.6), |q'| = sqrt(8.2); u0 2.8 / sqrt(8.2), u2 0.6 / sqrt(8.2):
u0 stays first (feedback from u1, outside the rows, would have put u2 first: 2.2 > 2.0).

Defaults (fb_docs 10 takes all three, alpha 1, beta 0.75): mean = (1.6/3, 1.8/3) = (0.5333, 0.6),
q' = (0.8 + 0.4, 0.6 + 0.45) = (1.2, 1.05).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from convlab import schema
from convlab.embed import HashEmbedder
from convlab.index import VectorIndex
from convlab.protocols import Query
from convlab.retrieval import SearchOptions
from convlab.retrieval.retrievers import DenseRetriever
from convlab.retrieval.rocchio import Rocchio, moved
from convlab.systems.experiment import parse_experiment
from convlab.systems.system import System

VECTORS = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32)
QUERY = Query("q", np.array([0.8, 0.6], dtype=np.float32))
STRONG = Rocchio(fb_docs=1, alpha=1.0, beta=2.0)


@pytest.fixture(scope="module")
def index() -> VectorIndex:
    units = schema.frame(
        [
            {"unit_id": f"u{i}", "text": f"t{i}", "doc_ids": [f"d{i}"], "chunk_ids": []}
            for i in range(3)
        ],
        schema.UNITS,
    )
    return VectorIndex.build(units, VECTORS, model_id="toy")


def _retriever(index: VectorIndex, rocchio: Rocchio | None) -> DenseRetriever:
    return DenseRetriever(index, HashEmbedder(2), rocchio)


def test_moved_query_by_hand() -> None:
    assert moved(QUERY.vector, VECTORS[[1]], STRONG).tolist() == pytest.approx(
        [2.0 / math.sqrt(8.84), 2.2 / math.sqrt(8.84)], rel=1e-6
    )
    n = math.hypot(1.2, 1.05)
    assert moved(QUERY.vector, VECTORS, Rocchio()).tolist() == pytest.approx(
        [1.2 / n, 1.05 / n], rel=1e-6
    )
    assert moved(QUERY.vector, VECTORS[:0], STRONG).tolist() == QUERY.vector.tolist()


@pytest.mark.parametrize("rows", [None, np.array([0, 1, 2])])
def test_second_pass_by_hand(index: VectorIndex, rows: np.ndarray | None) -> None:
    found = _retriever(index, STRONG).search(QUERY, 3, rows)
    n = math.sqrt(8.84)
    assert found.rows.tolist() == [1, 2, 0]  # the feedback lifts u2 above u0
    assert found.scores.tolist() == pytest.approx([2.96 / n, 2.2 / n, 2.0 / n], rel=1e-5)


def test_feedback_stays_inside_rows(index: VectorIndex) -> None:
    found = _retriever(index, STRONG).search(QUERY, 3, np.array([0, 2]))
    n = math.sqrt(8.2)
    assert found.rows.tolist() == [0, 2]
    assert found.scores.tolist() == pytest.approx([2.8 / n, 0.6 / n], rel=1e-5)


@pytest.mark.parametrize("rows", [None, np.array([0, 2])])
def test_no_rocchio_is_the_one_pass(index: VectorIndex, rows: np.ndarray | None) -> None:
    assert SearchOptions().retrieval.rocchio is None
    plain = _retriever(index, None).search(QUERY, 3, rows)
    cosine = VECTORS @ QUERY.vector
    expected = [1, 0, 2] if rows is None else [0, 2]
    assert plain.rows.tolist() == expected
    assert plain.scores.tolist() == cosine[expected].tolist()
    # no feedback weight: the query itself, searched again
    same = _retriever(index, Rocchio(beta=0.0)).search(QUERY, 3, rows)
    assert same.rows.tolist() == expected
    assert same.scores.tolist() == pytest.approx(cosine[expected].tolist(), rel=1e-6)


@pytest.mark.parametrize(
    "bad",
    [
        {"fb_docs": 0},
        {"fb_docs": 1001},
        {"fb_docs": 2.5},
        {"fb_docs": True},
        {"alpha": -0.1},
        {"beta": 101.0},
        {"beta": "0.75"},
        {"alpha": 0.0, "beta": 0.0},
    ],
)
def test_config_is_validated(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="rocchio"):
        Rocchio(**bad)  # type: ignore[arg-type]


def test_options_take_plain_data() -> None:
    options = SearchOptions.of(rocchio={"fb_docs": 5})  # type: ignore[arg-type]
    assert options.retrieval.rocchio == Rocchio(fb_docs=5, alpha=1.0, beta=0.75)
    assert options.replace(k=3).retrieval.rocchio == options.retrieval.rocchio
    with pytest.raises(ValueError, match=r"unknown key.*docs.*valid: fb_docs"):
        SearchOptions.of(rocchio={"docs": 5})  # type: ignore[arg-type]


def test_experiment_file_round_trip() -> None:
    table = {
        "name": "message+rocchio",
        "strategy": "message",
        "retrieval": "dense",
        "options": {"rocchio": {"fb_docs": 5, "alpha": 0.5, "beta": 0.25}},
    }
    (system,) = parse_experiment({"systems": [table]}, "x.toml").systems
    assert system.options.retrieval.rocchio == Rocchio(fb_docs=5, alpha=0.5, beta=0.25)
    assert system.as_dict() == table
    assert System.from_dict(system.as_dict()) == system
    bad = {**table, "options": {"rocchio": {"fb_docs": 0}}}
    with pytest.raises(ValueError, match=r"x.toml: systems\[0\].options.rocchio.fb_docs"):
        parse_experiment({"systems": [bad]}, "x.toml")
    bad = {**table, "options": {"rocchio": {"docs": 5}}}
    with pytest.raises(ValueError, match="unknown key 'docs'; valid: fb_docs"):
        parse_experiment({"systems": [bad]}, "x.toml")
