"""The evaluation harness end to end on the bundled sample, with the fast fake embedder.

The real model runs the same path in ``make test`` (eval-ci) and in the notebooks.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from convlab.embed import HashEmbedder
from convlab.evaluation.config import HEADLINE, EvalConfig
from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.evaluate import evaluate
from convlab.evaluation.runfolder import save_run
from convlab.evaluation.thresholds import measured
from convlab.paths import sample_data_path
from convlab.systems.system import System


@pytest.fixture(scope="module")
def ev():  # type: ignore[no-untyped-def]
    data = load_labelled(str(sample_data_path()))
    systems = [
        System(name="isolated", strategy="isolated"),
        System(name="isolated-again", strategy="isolated"),  # the baseline under another name
        System(name="whole_turn", strategy="whole_turn"),
        System(name="bm25:whole_turn", strategy="whole_turn", retrieval="bm25"),
    ]
    return evaluate(
        data, systems, embedder=HashEmbedder(256), config=EvalConfig(budgets=(128, 512))
    )


def test_every_system_has_a_headline_row(ev) -> None:  # type: ignore[no-untyped-def]
    t = ev.table()
    assert t["system"].to_list() == ["isolated", "isolated-again", "whole_turn", "bm25:whole_turn"]
    assert t.columns == ["system", *HEADLINE]


def test_coverage_joins_the_metrics_as_the_budget_mean(ev) -> None:  # type: ignore[no-untyped-def]
    b = (
        ev.budgets.filter(pl.col("budget") == 512, pl.col("coverage").is_not_null())
        .group_by("system")
        .agg(pl.col("coverage").mean())
    )
    s = ev.summary.filter(pl.col("metric") == "coverage@512").select("system", "mean")
    joined = b.join(s, on="system")
    assert joined.height == 4
    assert (joined["coverage"] - joined["mean"]).abs().max() < 1e-12


def test_a_copy_of_the_baseline_is_never_significant(ev) -> None:  # type: ignore[no-untyped-def]
    same = ev.significance.filter(pl.col("system") == "isolated-again")
    assert same.height > 0
    assert not same["significant"].any()
    assert (same["delta"] == 0.0).all()
    headline = ev.headline()
    row = headline.filter(pl.col("system") == "isolated-again").row(0, named=True)
    assert not any(str(row[m]).endswith("*") for m in HEADLINE)


def test_category_headline_has_a_row_per_system_and_category(ev) -> None:  # type: ignore[no-untyped-def]
    cats = ev.per_query["category"].unique().drop_nulls().to_list()
    t = ev.category_headline()
    assert t.height == 4 * len(cats)
    assert t.columns == ["category", "system", *HEADLINE]
    assert t["system"].head(4).to_list() == ev.systems
    assert set(ev.category_significance["metric"].unique()) <= set(HEADLINE)


def test_the_run_folder_and_thresholds_read_back(ev, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    report = save_run(ev, tmp_path)
    for name in (
        "config.json",
        "per_query.parquet",
        "budgets.parquet",
        "significance.parquet",
        "category_significance.parquet",
        "metrics.json",
        "recall_at_k.png",
        "coverage_by_budget.png",
    ):
        assert (tmp_path / name).stat().st_size > 0, name
    text = report.read_text()
    for system in ("isolated", "whole_turn", "bm25:whole_turn"):
        assert f"| {system} |" in text
    got = measured(tmp_path)
    expected = ev.summary.filter(pl.col("metric") == "coverage@512", pl.col("system") == "isolated")
    assert got["isolated"]["coverage@512"] == pytest.approx(expected["mean"].item())


def test_several_resurrection_policies_add_the_grid_and_leave_the_first_alone(
    ev, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from convlab.evaluation.runfolder import save_run

    data = load_labelled(str(sample_data_path()))
    systems = [
        System(name="whole_turn", strategy="whole_turn"),
        System(name="bm25:whole_turn", strategy="whole_turn", retrieval="bm25"),
    ]
    config = EvalConfig(budgets=(128, 512), resurrection=("unit", "window"))
    grid = evaluate(data, systems, embedder=HashEmbedder(256), config=config)
    # the first policy is the default one: the same budgets as a run with only it
    same = ev.budgets.filter(pl.col("system").is_in(["whole_turn", "bm25:whole_turn"]))
    assert grid.budgets.equals(same)
    assert set(grid.policy_budgets["policy"].unique()) == {"unit", "window"}
    unit = grid.policy_budgets.filter(pl.col("policy") == "unit").drop("policy")
    assert unit.equals(grid.budgets)
    window = grid.policy_budgets.filter(pl.col("policy") == "window")
    assert window.height == grid.budgets.height
    assert (window["tokens_used"] <= window["budget"]).all()
    assert not window["coverage"].equals(unit["coverage"])  # a window brings back other text
    save_run(grid, tmp_path)
    assert pl.read_parquet(tmp_path / "policy_budgets.parquet").equals(grid.policy_budgets)
    assert "Resurrection policies at equal budgets" in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize(
    ("names", "error"),
    [
        (("nope",), "unknown resurrection policy 'nope'; valid: "),
        ((), "at least one"),
        (("unit", "unit"), "twice"),
    ],
)
def test_resurrection_policies_are_checked(names: tuple[str, ...], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        EvalConfig(resurrection=names)


def test_fused_systems_run_beside_single_ones_and_leave_them_alone(tmp_path: Path) -> None:
    from convlab.systems.hits import fused_hits
    from convlab.systems.system import Tuning

    data = load_labelled(str(sample_data_path()))
    single = [
        System(name="bm25:whole_turn", strategy="whole_turn", retrieval="bm25"),
        System(name="sequential", strategy="sequential"),
    ]
    fused = [
        System(
            name="fixed",
            views=("bm25:whole_turn", "sequential"),
            fusion="rrf",
            weights=(1.0, 0.5),
        ),
        System(
            name="tuned",
            views=("bm25:whole_turn", "sequential"),
            tuning=Tuning(weights=(0.5, 1.0), samples=2, folds=3),
        ),
    ]
    config = EvalConfig(budgets=(512,), metrics=("recall@5",))
    alone = evaluate(data, single, embedder=HashEmbedder(64), config=config, progress=False)
    both = evaluate(data, single + fused, embedder=HashEmbedder(64), config=config, progress=False)
    for name in ("bm25:whole_turn", "sequential"):
        assert both.hits[name].equals(alone.hits[name])
    expected = fused_hits(
        [alone.hits["bm25:whole_turn"], alone.hits["sequential"]],
        [1.0, 0.5],
        method="rrf",
        params={},
        depth=config.depth,
    )
    assert both.hits["fixed"].equals(expected)
    # the tuned system: one row per fold, and its choice recorded for other data
    assert both.tuning["system"].unique().to_list() == ["tuned"]
    assert both.tuning.height == 3
    assert both.config["tuned"]["tuned"]["folds"] == 3
    # a fused system's hits resurrect (units of both views' strategies)
    assert both.budgets.filter(pl.col("system") == "fixed").height == data.queries.height
    # the run folder: every system as run, and the baseline + the tuned one with its choice fixed
    from convlab.systems.file import read_systems

    save_run(both, tmp_path)
    assert read_systems(tmp_path / "systems.toml") == single + fused
    # the baseline and the tuned system's parts, then the tuned system with its choice fixed
    baseline, part, chosen = read_systems(tmp_path / "systems.chosen.toml")
    assert (baseline, part) == (single[0], single[1])
    assert chosen.tuning is None
    assert list(chosen.weights or ()) == both.config["tuned"]["tuned"]["weights"]
    assert pl.read_parquet(tmp_path / "tuning.parquet").equals(both.tuning)
    report = (tmp_path / "report.md").read_text()
    assert "**Cross-validated:** `tuned` (3 folds)" in report
    save_run(alone, tmp_path / "alone")
    assert "Nothing was tuned" in (tmp_path / "alone" / "report.md").read_text()


def test_two_systems_may_not_share_a_name() -> None:
    data = load_labelled(str(sample_data_path()))
    twice = [System(name="s", strategy="message"), System(name="s", strategy="sequential")]
    with pytest.raises(ValueError, match="two systems share a name"):
        evaluate(data, twice, embedder=HashEmbedder(64))


def test_a_systems_text_format_builds_its_own_units(tmp_path: Path) -> None:
    from tests.helpers import locomo_file

    path = locomo_file(
        tmp_path / "tiny.json",
        [
            ("Ann", "I adopted a puppy."),
            ("Bo", "What is its name?"),
            ("Ann", "Her name is Pepper."),
        ],
        [{"question": "What is the puppy called?", "answer": "Pepper", "evidence": ["D1:3"]}],
    )
    data = load_labelled(str(path))
    systems = [
        System(name="bm25:message", strategy="message", retrieval="bm25"),
        System(name="bm25:message@locomo", strategy="message", retrieval="bm25", text="locomo"),
    ]
    ev = evaluate(data, systems, embedder=HashEmbedder(64), config=EvalConfig(budgets=(64,)))
    assert set(ev.units) == {"message", "message[locomo]"}
    assert ev.units["message"]["text"].to_list()[2] == "Ann: Her name is Pepper."
    assert ev.units["message[locomo]"]["text"].to_list()[2] == (
        '(1:56 pm on 8 May, 2023) Ann said, "Her name is Pepper."'
    )
    # the prefix is resurrected and counted with the chunk: more tokens for the same message
    used = ev.budgets.group_by("system").agg(pl.col("tokens_used").max())
    tokens = dict(used.iter_rows())
    assert tokens["bm25:message@locomo"] > tokens["bm25:message"]


def test_a_systems_keys_build_their_own_units_and_resurrect_the_original(tmp_path: Path) -> None:
    from convlab.pipeline.keys import KeyExpansion
    from tests.helpers import locomo_file

    said = [
        ("Ann", "I adopted a puppy from the shelter."),
        ("Bo", "What is its name?"),
        ("Ann", "Her name is Pepper, a border collie puppy."),
    ]
    question = {"question": "What is the puppy called?", "answer": "Pepper", "evidence": ["D1:3"]}
    data = load_labelled(str(locomo_file(tmp_path / "tiny.json", said, [question])))
    keys = KeyExpansion(source="session", phrases=3)
    systems = [
        System(name="bm25:message", strategy="message", retrieval="bm25"),
        System(name="bm25:message+keys", strategy="message", retrieval="bm25", keys=keys),
    ]
    ev = evaluate(data, systems, embedder=HashEmbedder(64), config=EvalConfig(budgets=(64,)))
    assert set(ev.units) == {"message", "message[keys=session:3]"}
    plain, keyed = ev.units["message"], ev.units["message[keys=session:3]"]
    assert plain["text"].to_list()[2] == "Ann: Her name is Pepper, a border collie puppy."
    for before, after in zip(plain["text"], keyed["text"], strict=True):
        assert after.startswith(before + " ")  # the session's phrases appended to every unit
    assert keyed["chunk_ids"].to_list() == plain["chunk_ids"].to_list()
    # resurrection brings back the chunks: the same tokens for the same docs
    used = ev.budgets.sort("query_id").group_by("system", maintain_order=True)
    tokens = dict(used.agg(pl.col("tokens_used").sum()).iter_rows())
    assert tokens["bm25:message+keys"] == tokens["bm25:message"]
    assert ev.config["systems"][1]["keys"] == keys.as_dict()


def test_the_config_records_each_strategys_cost_and_the_embedding_pass(tmp_path: Path) -> None:
    from convlab.embed import CachedEmbedder
    from convlab.evaluation.runfolder import metrics_record
    from convlab.pipeline.unit_costs import messages_with_text

    data = load_labelled(str(sample_data_path()))
    systems = [
        System(name="isolated", strategy="isolated"),
        System(name="isolated_window", strategy="isolated_window"),
        System(name="bm25:message", strategy="message", retrieval="bm25"),  # nothing embedded
    ]
    embedder = CachedEmbedder(HashEmbedder(64), tmp_path)
    ev = evaluate(data, systems, embedder=embedder, config=EvalConfig(budgets=(128,)))
    costs = {r["strategy"]: r for r in ev.config["unit_costs"]}
    assert list(costs) == ["isolated", "isolated_window", "message", "all"]
    from convlab.pipeline.chunks import chunks

    messages = messages_with_text(chunks(data.corpus, EvalConfig().policy))
    for name in ("isolated", "isolated_window", "message"):
        units = ev.units[name]
        assert costs[name]["units"] == units.height
        assert costs[name]["units_per_message"] == units.height / messages
        assert costs[name]["distinct_texts"] == units["text"].n_unique()
    assert costs["message"]["tokens_embedded"] == 0
    assert (
        costs["isolated"]["tokens_embedded"]
        == ev.units["isolated"].unique("text")["n_tokens"].sum()
    )
    # a cold cache: the pass embedded exactly the distinct texts of the embedded strategies
    dense = pl.concat([ev.units["isolated"], ev.units["isolated_window"]])
    pass_ = ev.config["embedding"]
    assert pass_["embedded"] == pass_["distinct"] == dense["text"].n_unique()
    assert costs["all"]["distinct_texts"] == dense["text"].n_unique()
    assert pass_["seconds"] >= 0
    # metrics.json keeps its keys: the costs are the config's and the report's
    assert list(metrics_record(ev)) == [
        "summary",
        "by_category",
        "budgets",
        "significance",
        "category_significance",
    ]


def test_the_run_folder_names_its_groups(ev, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    save_run(ev, tmp_path)
    groups = pl.read_parquet(tmp_path / "groups.parquet")
    assert groups.columns == ["query_id", "group", "fold"]
    assert groups.height == 68
    # the sample's queries name no conversation (but three): their relevant docs' conversations
    # place them, and queries whose docs lie in two conversations join them: 20 conversations
    # make 6 groups, so 6 folds (fewer groups than the 10 folds asked)
    record = json.loads((tmp_path / "config.json").read_text())["groups"]
    assert record == {"rule": "conversation", "groups": 6, "folds": 6, "queries": 68}
    per_group = groups.group_by("group").agg(pl.col("fold").n_unique().alias("n"))
    assert per_group["n"].to_list() == [1] * 6
