"""Each system's tokens embedded per token of text and CPU-seconds, recorded by the evaluation.

A ``static:VIEW`` is built apart with its own embedder; here the static embedder is replaced by
a hashed bag of words of another width, so the test needs no model.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import convlab.evaluation.evaluate as evaluate_module
from convlab.embed import CachedEmbedder, HashEmbedder
from convlab.evaluation.config import EvalConfig
from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.evaluate import evaluate
from convlab.evaluation.system_costs import pass_embedder
from convlab.paths import sample_data_path
from convlab.pipeline.chunks import chunks
from convlab.pipeline.late import late_plan
from convlab.systems.system import System


def test_pass_embedder_reads_the_index_key() -> None:
    assert pass_embedder("sequential") is None
    assert pass_embedder("static:sequential") == "static"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    data = load_labelled(str(sample_data_path()))
    static = HashEmbedder(32)
    mp = pytest.MonkeyPatch()
    mp.setattr(evaluate_module, "companion_embedder", lambda name, like: static)
    systems = [
        System(name="sequential", strategy="sequential"),
        System(name="static:sequential", views=("static:sequential",)),
        System(name="bm25:message", strategy="message", retrieval="bm25"),
        System(
            name="both",
            views=("bm25:message", "sequential", "static:sequential", "turn_pair"),
            weights=(1, 1, 1, 0.5),
        ),
        System(name="late", views=("late_sequential", "late_turn_pair"), weights=(1, 0.5)),
    ]
    cache = CachedEmbedder(HashEmbedder(64), tmp_path_factory.mktemp("cache"))
    try:
        ev = evaluate(data, systems, embedder=cache, config=EvalConfig(budgets=(128,)))
    finally:
        mp.undo()
    return data, ev, static


def test_a_static_view_is_searched_with_its_own_embedder(run) -> None:  # type: ignore[no-untyped-def]
    _, ev, static = run
    assert static.calls >= 2  # its units, then its queries
    summary = ev.summary.filter(pl.col("metric") == "recall@5")
    assert set(summary["system"]) == {
        "sequential",
        "static:sequential",
        "bm25:message",
        "both",
        "late",
    }


def test_each_system_costs_its_distinct_texts_once_per_embedder(run) -> None:  # type: ignore[no-untyped-def]
    data, ev, _ = run
    costs = {r["system"]: r for r in ev.config["system_costs"]}
    text = int(chunks(data.corpus, EvalConfig().policy)["n_tokens"].sum())
    seq = ev.units["sequential"].unique("text")["n_tokens"].sum()
    pair = ev.units["turn_pair"]
    both = pl.concat([ev.units["sequential"], pair]).unique("text")["n_tokens"].sum()
    assert {r["text_tokens"] for r in costs.values()} == {text}
    assert costs["sequential"]["tokens_embedded"] == seq
    assert costs["static:sequential"]["tokens_embedded"] == seq  # the same texts, apart
    assert costs["bm25:message"]["tokens_embedded"] == 0
    assert costs["bm25:message"]["cpu_seconds"] == 0.0
    # sequential and turn_pair share texts, embedded once by MiniLM; static embeds its own again
    assert costs["both"]["tokens_embedded"] == both + seq
    assert costs["sequential"]["tokens_per_text_token"] == seq / text
    # a cold cache: every pass's rate is measured, so every system's CPU-seconds are known
    assert all(r["cpu_seconds"] is not None and r["cpu_seconds"] >= 0 for r in costs.values())
    assert ev.config["embedding"]["cpu_seconds"] >= 0


def test_a_warm_cache_leaves_the_cpu_seconds_unknown(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data, _, _ = run
    cache = CachedEmbedder(HashEmbedder(64), tmp_path)
    systems = [System(name="sequential", strategy="sequential")]
    evaluate(data, systems, embedder=cache, config=EvalConfig(budgets=(128,)))
    warm = CachedEmbedder(HashEmbedder(64), tmp_path)
    ev = evaluate(data, systems, embedder=warm, config=EvalConfig(budgets=(128,)))
    (row,) = ev.config["system_costs"]
    assert row["cpu_seconds"] is None
    assert row["tokens_embedded"] > 0


def test_a_late_system_costs_its_passes_once_per_window(run) -> None:  # type: ignore[no-untyped-def]
    data, ev, _ = run
    costs = {r["system"]: r for r in ev.config["system_costs"]}
    chunked = chunks(data.corpus, EvalConfig().policy)
    passes = late_plan(chunked, 256).tokens  # late_sequential and late_turn_pair share them
    assert costs["late"]["tokens_embedded"] == passes
    text = int(chunked["n_tokens"].sum())
    # every pass holds whole messages plus [CLS] and [SEP]: at least the text, far below plain
    assert text <= passes < costs["both"]["tokens_embedded"]
