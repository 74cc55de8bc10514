"""The policy CV study's run folder, from a hand-made grid (the grid of ``test_policy_cv``).

Two conversations ``a`` and ``b``, two queries each; at 512 tokens ``message + unit`` covers
all of ``a`` and none of ``b``, ``y + window`` none of ``a`` and 0.2 of ``b``. Two folds, one
conversation each: the fold holding ``a`` out trains on ``b`` and chooses ``y + window`` (``a``
scores 0), the fold holding ``b`` out chooses ``message + unit`` (``b`` scores 0): held-out
coverage 0.0, against the reference ``message + unit`` at 512: (1 + 1 + 0 + 0) / 4 = 0.5.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from convlab.studies.policy_cv_run import PolicyCV, run, source

QUERIES = ["a:q0", "a:q1", "b:q0", "b:q1"]
CELLS = {("message", "unit"): [1.0, 1.0, 0.0, 0.0], ("y", "window"): [0.0, 0.0, 0.2, 0.2]}


def _grid_folder(root: Path) -> Path:
    root.mkdir(parents=True)
    rows = [
        {
            "system": s,
            "policy": p,
            "budget": 512,
            "query_id": q,
            "coverage": c,
            "answer_contained": c,
        }
        for (s, p), values in CELLS.items()
        for q, c in zip(QUERIES, values, strict=True)
    ]
    pl.DataFrame(rows, schema_overrides={"budget": pl.Int32}).write_parquet(
        root / "policy_budgets.parquet"
    )
    return root


def test_a_grid_folder_names_its_run_and_a_run_folder_is_its_own(tmp_path: Path) -> None:
    run_dir, grid_dir = tmp_path / "run", tmp_path / "grid"
    run_dir.mkdir()
    (run_dir / "config.json").write_text("{}")
    grid_dir.mkdir()
    (grid_dir / "grid.json").write_text(json.dumps({"run": str(run_dir)}))
    (grid_dir / "config.json").write_text(json.dumps({"study": "resurrection-grid"}))
    assert source(grid_dir) == run_dir  # its own config.json does not make it a run
    assert source(run_dir) == run_dir


def test_the_run_folder_of_a_tiny_grid(tmp_path: Path) -> None:
    folder = _grid_folder(tmp_path / "r1")
    missing = tmp_path / "empty"
    missing.mkdir()
    config = PolicyCV(runs=(folder, missing), budgets=(512,), reference_budget=512, folds=2)
    out = tmp_path / "out"
    result = run(config, out, command=["python", "-m", "eval.policy_cv", "r1"])
    figures = result.metrics["runs"][str(folder)]
    assert figures["budgets"]["512"]["coverage"] == 0.0  # each fold chose the other's best
    assert figures["reference"]["coverage"] == 0.5
    assert figures["comparison"]["coverage"]["delta"] == pytest.approx(-0.5)
    assert "does not exist" in result.metrics["runs"][str(missing)]["error"]
    record = json.loads((out / "config.json").read_text())
    assert record["study"] == "policy-cv"
    assert record["command"] == "python -m eval.policy_cv r1"
    # without qrels the ids name the conversations: 2 groups, 2 folds, 4 queries
    expected = {"rule": "conversation", "groups": 2, "folds": 2, "queries": 4}
    assert record["groups"] == {"r1": expected}
    assert json.loads((out / "r1" / "config.json").read_text())["groups"] == expected
    groups = pl.read_parquet(out / "r1" / "groups.parquet")
    assert groups["group"].to_list() == ["a", "a", "b", "b"]
    assert groups["fold"][0] == groups["fold"][1] != groups["fold"][2] == groups["fold"][3]
    pq = pl.read_parquet(out / "r1" / "per_query.parquet").filter(pl.col("metric") == "coverage")
    means = dict(pq.group_by("system").agg(pl.col("value").mean()).rows())
    assert means == {"policy CV@512": 0.0, "message+unit@512": 0.5}
    assert result.report.read_text() == (out / "policy_cv.md").read_text()


def test_a_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such folder"):
        run(PolicyCV(runs=(tmp_path / "nowhere",)), tmp_path / "out")
