"""The default system: the fusion eval.run chose, searched alike by the CLI, panel and Python."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from convlab.app.cli.main import main
from convlab.app.exits import EXIT_OK
from convlab.defaults import SYSTEM, SYSTEM_FILE
from convlab.embed import HashEmbedder
from convlab.evaluation.config import EvalConfig
from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.evaluate import evaluate
from convlab.paths import sample_data_path
from convlab.systems import default_system
from convlab.systems.file import chosen_systems, read_systems
from convlab.systems.system import default_systems

STRATEGIES = ["isolated", "message", "turn_pair", "sequential", "whole_turn", "qa_pair"]


@pytest.fixture(scope="module")
def default_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample indexed by `convlab index` with no --system (the hash embedder)."""
    out = tmp_path_factory.mktemp("default") / "store"
    src = sample_data_path() / "transcripts"
    argv = ["index", str(src), "--store", str(out), "--embedder", "hash", "-q"]
    assert main(argv) == EXIT_OK
    return out


def test_the_default_is_eval_runs_fusion_convex_with_its_chosen_weights_fixed() -> None:
    # eval.run's default systems hold fusion:convex with weights to be cross-validated; the
    # chosen file fixes them (chosen_systems); the shipped file is that record, nothing else
    (tuned,) = [s for s in default_systems(STRATEGIES) if s.name == "fusion:convex"]
    shipped = default_system()
    (chosen,) = chosen_systems([tuned], {"fusion:convex": {"weights": list(shipped.weights)}})
    assert shipped == chosen
    assert [v.name for v in shipped.views] == [
        "bm25:message",
        "bm25:sequential",
        "bm25:turn_pair",
        "sequential",
        "turn_pair",
    ]
    assert (shipped.fusion, dict(shipped.fusion_params)) == ("convex", {"norm": "z-score"})
    assert shipped.tuning is None
    assert shipped.name == SYSTEM
    assert read_systems(SYSTEM_FILE) == [shipped]  # one system, read by eval.run as it is


def test_cli_python_and_panel_default_to_it(
    default_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import convlab
    from convlab.app.widgets import SearchPanel

    store = convlab.open_store(default_store)
    assert store.system() == default_system()
    assert main(["stats", "--store", str(default_store), "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["system"] == default_system().name
    panel = SearchPanel.from_store(default_store, embedder=HashEmbedder())
    assert panel.system.value == default_system().name
    assert panel.data is not None
    assert panel.data.systems()[panel.system.value] == default_system()


def test_the_store_search_ranks_as_eval_run_ranks(
    default_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import convlab

    # eval.run over the same transcripts (whole corpus): the hits of the default system must be
    # the store's, doc for doc and score for score, for every query of the sample
    data = load_labelled(None)
    config = EvalConfig(scope="corpus", budgets=(128,))
    ev = evaluate(data, [default_system()], embedder=HashEmbedder(), config=config, progress=False)
    assert ev.config["systems"] == [default_system().as_dict()]
    measured = ev.hits[default_system().name]
    store = convlab.open_store(default_store)
    queries = data.queries.select("query_id", "text").iter_rows()
    compared = 0
    for qid, text in queries:
        want = measured.filter((pl.col("query_id") == qid) & (pl.col("rank") <= 10))
        got = store.search(text, k=10)
        assert got["doc_id"].to_list() == want["doc_id"].to_list(), qid
        assert got["score"].to_list() == pytest.approx(want["score"].to_list(), abs=1e-9)
        assert got["unit_id"].to_list() == want["unit_id"].to_list()
        compared += 1
    assert compared == data.queries.height > 20
    # and the CLI prints the same first doc as Python finds
    text = data.queries["text"][0]
    argv = ["search", text, "--store", str(default_store), "-k", "3", "--json"]
    assert main([*argv, "--min-confidence", "0"]) == EXIT_OK
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["doc_id"] for r in lines] == store.search(text, k=3)["doc_id"].to_list()


def test_a_tuned_system_is_refused_by_the_store_search(default_store: Path) -> None:
    import convlab

    (tuned,) = [s for s in default_systems(STRATEGIES) if s.name == "fusion:convex"]
    with pytest.raises(ValueError, match="cross-validation"):
        convlab.open_store(default_store).search("postgres", system=tuned)
    assert replace(tuned, tuning=None).weights is None  # all views weight 1: a fixed system
    hits = convlab.open_store(default_store).search("postgres", system=replace(tuned, tuning=None))
    assert hits.height == 10
