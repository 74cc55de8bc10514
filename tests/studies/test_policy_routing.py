"""The resurrection cell routed per question type."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from convlab.studies.policy_routing import cell_matrix, policy_routing
from convlab.studies.routing import Routing
from convlab.systems.system import Tuning

IDS = ["a:q0", "b:q1", "a:q2", "b:q3"]
# cell message + unit is right for type x (q0, q1), message + doc for type y (q2, q3)
COVERAGE = {("message", "unit"): [1.0, 1.0, 0.0, 0.0], ("message", "doc"): [0.0, 0.0, 1.0, 1.0]}


def _grid() -> pl.DataFrame:
    rows = []
    for (system, policy), cov in COVERAGE.items():
        for q, c in zip(IDS, cov, strict=True):
            rows.append(
                {"query_id": q, "budget": 512, "coverage": c, "answer_contained": 1.0 - c}
                | {"system": system, "policy": policy}
            )
    # a query without evidence: no coverage anywhere, left out of the scoring
    rows += [
        {"query_id": "a:q9", "budget": 512, "coverage": None, "answer_contained": None}
        | {"system": s, "policy": p}
        for s, p in COVERAGE
    ]
    return pl.DataFrame(rows)


QUERIES = pl.DataFrame(
    {
        "query_id": [*IDS, "a:q9"],
        "text": ["when did a", "when did b", "what is c", "what is d", "what is e"],
        "category": ["x", "x", "y", "y", "y"],
        "group": ["a", "b", "a", "b", "a"],
    }
)


def test_cell_matrix_is_cells_by_queries() -> None:
    cells, m = cell_matrix(_grid(), 512, IDS, "coverage")
    assert cells == [("message", "unit"), ("message", "doc")]
    assert m.tolist() == [[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]]
    with pytest.raises(ValueError, match="no rows at 256"):
        cell_matrix(_grid(), 256, IDS, "coverage")
    with pytest.raises(ValueError, match="lacks coverage"):
        cell_matrix(_grid(), 512, [*IDS, "a:q9"], "coverage")


def test_each_type_gets_its_best_cell_held_out() -> None:
    out = policy_routing(_grid(), QUERIES, Routing(tuning=Tuning(folds=2), min_train=1))
    assert out["queries"] == 4  # a:q9 has no coverage
    means = {(r["system"], r["metric"]): r["mean"] for r in out["means"]}
    # one cell for all: the tie (0.5 each) goes to the first cell, message + unit
    assert means[("cv one cell", "coverage")] == 0.5
    assert means[("routed:gold", "coverage")] == 1.0
    assert means[("routed:gold", "answer_contained")] == 0.0  # 1 - coverage in this grid
    gold = [r for r in out["comparisons"] if r["system"] == "routed:gold" and r["subset"] == "all"]
    assert gold[0]["delta"] == 0.5
    cells = {(r["type"], r["cell"]) for r in out["choices"] if r["route"] == "routed:gold"}
    assert cells == {("*", "message + unit"), ("x", "message + unit"), ("y", "message + doc")}
    assert np.isfinite(gold[0]["p"])
