"""The grid of a run folder (``eval.resurrection_grid``), through eval.run's grid code."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from convlab.embed import HashEmbedder
from convlab.evaluation.config import EvalConfig
from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.evaluate import evaluate
from convlab.evaluation.policy_grid import grid_means
from convlab.evaluation.runfolder import save_run
from convlab.paths import sample_data_path
from convlab.studies.resurrection_grid import GridStudy
from convlab.studies.resurrection_grid import run as grid_run
from convlab.systems.system import System
from tests.evaluation.test_policy_grid import grid_frame

GRID_FILES = [
    "config.json",
    "grid.json",
    "grid.md",
    "metrics.json",
    "policy_budgets.parquet",
    "policy_grid.png",
    "policy_significance.parquet",
    "report.md",
]


def test_a_saved_grid_is_read_tested_and_written_without_data(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    config = {"baseline": "message", "config": {"seed": 0}, "systems": [{"name": "message"}]}
    (run / "config.json").write_text(json.dumps(config))
    grid_frame().write_parquet(run / "policy_budgets.parquet")
    out = tmp_path / "out"
    grid_run(GridStudy(run=run, budgets=(512, 1024)), out)
    assert sorted(p.name for p in out.iterdir()) == GRID_FILES
    result = json.loads((out / "grid.json").read_text())
    assert result["source"] == str(run / "policy_budgets.parquet")
    assert (result["baseline"], result["queries"]) == ("message", 10)
    eff = {r["metric"]: r for r in result["efficiency"]}
    assert (eff["coverage"]["system"], eff["coverage"]["policy"]) == ("message", "doc")
    assert eff["coverage"]["delta"] == 0.5
    assert "| message | doc | 512 | 1.000* |" in (out / "grid.md").read_text()
    sig = pl.read_parquet(out / "policy_significance.parquet")
    assert set(sig["system"]) == {"message", "bm25:message"}
    record = json.loads((out / "config.json").read_text())
    assert record["study"] == "resurrection-grid"
    assert record["config"]["budgets"] == [512, 1024]
    assert record["data"]["sources"][0]["folder"] == str(run)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["efficiency"] == result["efficiency"]
    assert (out / "report.md").read_text() == (out / "grid.md").read_text() + "\n"
    # one budget asked for: the grid is cut to it, and the efficiency test cannot be run
    grid_run(GridStudy(run=run, budgets=(512,), baseline="bm25:message"), out)
    result = json.loads((out / "grid.json").read_text())
    assert {r["budget"] for r in result["grid"]} == {512}
    assert result["efficiency"] == []
    with pytest.raises(ValueError, match=r"not in .*policy_budgets.parquet: \['nope'\]"):
        grid_run(GridStudy(run=run, systems=("nope",)), out)


def test_without_a_saved_grid_the_data_is_needed(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"config": {}, "systems": []}))
    with pytest.raises(ValueError, match="--data is needed"):
        grid_run(GridStudy(run=tmp_path), tmp_path / "out")


def test_the_trec_runs_give_eval_runs_grid_for_the_doc_policy(tmp_path: Path) -> None:
    """The no-model mode maps ranked docs back to units; ``doc`` reads only the doc: exact."""
    data = load_labelled(str(sample_data_path()))
    systems = [
        System(name="message", strategy="message"),
        System(name="bm25:turn_pair", strategy="turn_pair", retrieval="bm25"),
    ]
    config = EvalConfig(budgets=(256, 1024), resurrection=("unit", "doc"))
    ev = evaluate(data, systems, embedder=HashEmbedder(64), config=config, progress=False)
    run = tmp_path / "run"
    save_run(ev, run)
    (run / "policy_budgets.parquet").unlink()  # a run folder made before the grid
    out = tmp_path / "out"
    study = GridStudy(
        run=run,
        data=str(sample_data_path()),
        systems=("message", "bm25:turn_pair"),
        budgets=(256, 1024),
    )
    grid_run(study, out)
    result = json.loads((out / "grid.json").read_text())
    assert result["source"] == "trec runs"
    assert result["mapping"]["message"]["unmapped"] == 0
    rebuilt = pl.read_parquet(out / "policy_budgets.parquet")
    cols = ["system", "policy", "budget", "coverage", "answer_contained", "tokens_used"]
    doc = pl.col("policy") == "doc"
    assert (
        grid_means(rebuilt.filter(doc))
        .select(cols)
        .equals(grid_means(ev.policy_budgets.filter(doc)).select(cols))
    )
    # the saved run's unit figures are checked against the rebuilt ones
    assert set(result["unit_policy_vs_saved_run"]) == {"message", "bm25:turn_pair"}
