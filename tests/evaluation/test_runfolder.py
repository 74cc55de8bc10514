"""Run folders (results beside their config), thresholds and the comparison's command line."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from convlab.app.cli import eval as eval_cli
from convlab.atomic import write_file_atomic
from convlab.embed import HashEmbedder
from convlab.evaluation import compare, thresholds
from convlab.evaluation.config import HEADLINE, EvalConfig
from convlab.evaluation.datasets import LabelledData, load_labelled
from convlab.evaluation.evaluate import evaluate
from convlab.evaluation.policy_grid import grid_significance
from convlab.evaluation.queries import write_qrels, write_run
from convlab.evaluation.result import Evaluation
from convlab.evaluation.runfolder import metrics_record, primary_metric, save_grid, save_run
from convlab.paths import sample_data_path
from convlab.systems.system import System

RUN_FILES = (
    "config.json",
    "per_query.parquet",
    "budgets.parquet",
    "significance.parquet",
    "category_significance.parquet",
    "metrics.json",
    "recall_at_k.png",
    "coverage_by_budget.png",
    "recall_by_category.png",
    "unit_lengths.png",
    "report.md",
    "runs/isolated-afed2f77.trec",  # the name's slug and sha256's first 8 hex digits
    "runs/bm25_isolated-d72d51c7.trec",
)


@pytest.fixture(scope="module")
def ev() -> Evaluation:
    data = load_labelled(str(sample_data_path()))
    systems = [
        System(name="isolated", strategy="isolated"),
        System(name="bm25:isolated", strategy="isolated", retrieval="bm25"),
    ]
    config = EvalConfig(budgets=(128, 512))
    return evaluate(data, systems, embedder=HashEmbedder(64), config=config)


def test_a_run_folder_holds_every_file_and_no_temporary_one(ev: Evaluation, tmp_path: Path) -> None:
    out = tmp_path / "run"
    report = save_run(ev, out)
    assert report == out / "report.md"
    for name in RUN_FILES:
        assert (out / name).stat().st_size > 0, name
    left = [p.name for p in out.rglob("*") if p.name.startswith(".tmp-")]
    assert left == []


def test_the_config_and_the_primary_metric_sit_beside_the_results(
    ev: Evaluation, tmp_path: Path
) -> None:
    save_run(ev, tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["primary_metric"] == "recall@5" == HEADLINE[0]
    assert config["config"]["budgets"] == [128, 512]
    assert [s["name"] for s in config["systems"]] == ["isolated", "bm25:isolated"]
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert list(metrics) == [
        "summary",
        "by_category",
        "budgets",
        "significance",
        "category_significance",
    ]
    assert {(r["system"], r["budget"]) for r in metrics["budgets"]} == {
        ("bm25:isolated", 128),
        ("bm25:isolated", 512),
        ("isolated", 128),
        ("isolated", 512),
    }


def test_a_trec_run_in_the_folder_is_the_system_hits(ev: Evaluation, tmp_path: Path) -> None:
    save_run(ev, tmp_path)
    lines = (tmp_path / "runs" / "bm25_isolated-d72d51c7.trec").read_text().splitlines()
    assert len(lines) == ev.hits["bm25:isolated"].height
    assert all(line.endswith(" bm25_isolated-d72d51c7") for line in lines)


def _tiny_evaluation(headline: tuple[str, ...]) -> Evaluation:
    """Two queries of one system at one budget: the means are worked by hand below."""
    empty = pl.DataFrame()
    budgets = pl.DataFrame(
        {
            "system": ["a", "a"],
            "query_id": ["q1", "q2"],
            "budget": [128, 128],
            "coverage": [1.0, 0.0],
            "evidence_token_recall": [0.5, 0.25],
            "tokens_used": [100, 50],
            "answer_contained": [1.0, 1.0],
            "redundancy": [0.0, 0.5],
        }
    )
    summary = pl.DataFrame({"system": ["a"], "metric": ["recall@5"], "mean": [0.75]})
    return Evaluation(
        per_query=empty,
        summary=summary,
        by_category=empty,
        significance=empty,
        category_significance=empty,
        budgets=budgets,
        hits={},
        units={},
        config={"config": {"headline": list(headline)}, "systems": [{"name": "a"}]},
    )


def test_metrics_json_averages_resurrection_per_system_and_budget() -> None:
    record = metrics_record(_tiny_evaluation(HEADLINE))
    assert record["budgets"] == [
        {
            "system": "a",
            "budget": 128,
            "coverage": 0.5,  # (1 + 0) / 2
            "evidence_token_recall": 0.375,  # (0.5 + 0.25) / 2
            "tokens_used": 75.0,  # (100 + 50) / 2
            "answer_contained": 1.0,
            "redundancy": 0.25,  # (0 + 0.5) / 2
        }
    ]
    assert record["summary"] == [{"system": "a", "metric": "recall@5", "mean": 0.75}]


def test_the_primary_metric_is_the_first_of_the_headline() -> None:
    assert primary_metric(_tiny_evaluation(("ndcg@10", "recall@5"))) == "ndcg@10"


def test_trec_files_are_written_whole(tmp_path: Path) -> None:
    queries = pl.DataFrame({"query_id": ["q1", "q2"], "relevant": [["d1", "d2"], []]})
    write_qrels(queries, tmp_path / "qrels.txt")
    assert (tmp_path / "qrels.txt").read_text() == "q1 0 d1 1\nq1 0 d2 1\n"
    hits = pl.DataFrame({"query_id": ["q1"], "doc_id": ["d2"], "rank": [1], "score": [0.1234567]})
    write_run(hits, tmp_path / "a.trec", "a")
    assert (tmp_path / "a.trec").read_text() == "q1 Q0 d2 1 0.123457 a\n"


def test_a_writer_that_fails_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "metrics.parquet"
    target.write_text("old")

    def half(tmp: Path) -> None:
        tmp.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_file_atomic(target, half)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.parquet"]


# --- thresholds ----------------------------------------------------------------------------------


@pytest.fixture
def run(tmp_path: Path) -> Path:
    summary = [
        {"system": "a", "metric": "recall@5", "mean": 0.5},
        {"system": "a", "metric": "ndcg@10", "mean": 0.9},
    ]
    (tmp_path / "metrics.json").write_text(json.dumps({"summary": summary}))
    return tmp_path


def test_thresholds_name_each_one_not_met(run: Path) -> None:
    assert thresholds.measured(run) == {"a": {"recall@5": 0.5, "ndcg@10": 0.9}}
    failures = thresholds.check(
        run, {"a": {"recall@5": 0.6, "ndcg@10": 0.9, "bpref": 0.1}, "b": {"recall@5": 0.1}}
    )
    assert failures == [
        "a recall@5 = 0.5 < 0.6",
        "a bpref = None < 0.1",
        f"b: not in {run}",
    ]


# --- the comparison's command line ---------------------------------------------------------------


def test_strategies_are_checked_against_the_registry() -> None:
    assert compare.check_strategies("isolated,,message") == ["isolated", "message"]
    with pytest.raises(ValueError, match=r"unknown strategies \['nope'\]; valid: isolated, "):
        compare.check_strategies("isolated,nope")


def test_unknown_strategies_exit_2_before_any_data_is_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert eval_cli.main(["--strategies", "nope", "--data", "/no/such/folder"]) == 2
    assert capsys.readouterr().err.startswith("python -m eval.run: unknown strategies ['nope']")


def _labelled(**frames: pl.DataFrame) -> LabelledData:
    """Labelled data as far as the config looks at it: which optional frames it has."""
    parts = {"haystacks": None, "sessions": None, "judged": None, **frames}
    return SimpleNamespace(**parts)  # type: ignore[return-value]


def test_the_comparison_config_follows_the_data() -> None:
    plain = compare.comparison_config(_labelled(), budgets=(256,), scope=None, baseline=None)
    assert (plain.scope, plain.headline, plain.budgets) == ("conversation", HEADLINE, (256,))
    hay = pl.DataFrame({"query_id": ["q"], "conversation_id": ["c"]})
    sessions = pl.DataFrame({"query_id": ["q"], "relevant": [["c"]]})
    lme = compare.comparison_config(
        _labelled(haystacks=hay, sessions=sessions), budgets=(256,), scope=None, baseline="x"
    )
    assert lme.scope == "haystack"
    assert lme.baseline == "x"
    assert lme.headline == (
        "recall@5",
        "recall@10",
        "ndcg@10",
        "success@5",
        "session:success@5",
        "session:ndcg@10",
    )
    assert "session:recall_all@10" in lme.metrics
    judged = compare.comparison_config(
        _labelled(judged=pl.DataFrame()), budgets=(256,), scope="corpus", baseline=None
    )
    assert judged.scope == "corpus"
    assert judged.headline == (*HEADLINE, "judged@10", "bpref")


# --- the system x policy grid --------------------------------------------------------------------


def test_save_grid_writes_the_frames_and_a_png(tmp_path: Path) -> None:
    from tests.evaluation.test_policy_grid import grid_frame

    grid = grid_frame()
    sig = grid_significance(grid, baseline="message")
    paths = save_grid(tmp_path, grid, sig, baseline="message")
    assert [p.name for p in paths] == [
        "policy_budgets.parquet",
        "policy_significance.parquet",
        "policy_grid.png",
    ]
    assert (tmp_path / "policy_grid.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pl.read_parquet(tmp_path / "policy_budgets.parquet").equals(grid)
    assert pl.read_parquet(tmp_path / "policy_significance.parquet").equals(sig)


def test_a_plot_that_fails_leaves_the_old_png_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convlab.evaluation import runfolder
    from tests.evaluation.test_policy_grid import grid_frame

    (tmp_path / "policy_grid.png").write_bytes(b"old")

    def half(fig: object, path: Path) -> None:
        path.write_bytes(b"\x89PNG half")
        raise OSError("disk full")

    monkeypatch.setattr(runfolder, "_save_figure", half)
    grid = grid_frame()
    with pytest.raises(OSError, match="disk full"):
        save_grid(tmp_path, grid, grid_significance(grid, baseline="message"), baseline="message")
    assert (tmp_path / "policy_grid.png").read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "policy_budgets.parquet",
        "policy_grid.png",
        "policy_significance.parquet",
    ]


def test_a_run_with_several_policies_saves_the_grid_and_its_tests(tmp_path: Path) -> None:
    data = load_labelled(str(sample_data_path()))
    systems = [
        System(name="isolated", strategy="isolated"),
        System(name="bm25:isolated", strategy="isolated", retrieval="bm25"),
    ]
    config = EvalConfig(budgets=(128, 512), resurrection=("unit", "doc"))
    grid_ev = evaluate(data, systems, embedder=HashEmbedder(64), config=config)
    assert grid_ev.policy_significance.height == 0  # save_run fills it
    save_run(grid_ev, tmp_path, grid_systems=["bm25:isolated"])
    for name in ("policy_budgets.parquet", "policy_significance.parquet", "policy_grid.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    sig = pl.read_parquet(tmp_path / "policy_significance.parquet").filter(pl.col("test") == "grid")
    # 2 measures x 2 budgets x (2 systems x 2 policies); the reference: the baseline with unit
    assert sig.height == 16
    assert set(sig.select("reference_system", "reference_policy").rows()) == {("isolated", "unit")}
    report = (tmp_path / "report.md").read_text()
    assert "differs from `isolated` + `unit` at the same budget" in report
    assert "](policy_grid.png)" in report
    # no message system: the efficiency question cannot be asked, and the report says so
    assert "Efficiency test not run" in report


# --- the comparison as a typed config ------------------------------------------------------------


def test_a_comparison_is_a_checked_config() -> None:
    c = compare.Comparison()
    assert (c.strategies, c.budgets, c.resurrection, c.every) == (
        (),
        (128, 256, 512, 1024, 2048),
        ("unit",),
        1,
    )
    for bad, says in [
        ({"every": 0}, "every is 0"),
        ({"budgets": (0,)}, "budgets"),
        ({"budgets": ()}, "budgets"),
        ({"strategies": ("nope",)}, r"unknown strategies \['nope'\]"),
        ({"resurrection": ("nope",)}, "nope"),
        ({"scope": "nope"}, "scope must be one of"),
        ({"protocol": "nope"}, "protocol must be one of"),
    ]:
        with pytest.raises(ValueError, match=says):
            compare.Comparison(**bad)  # type: ignore[arg-type]


def test_the_default_comparison_compares_the_default_experiment() -> None:
    from convlab.systems.file import default_strategies
    from convlab.systems.system import default_systems

    systems = compare.comparison_systems(compare.Comparison())
    assert systems == default_systems(default_strategies())
    named = compare.comparison_systems(compare.Comparison(strategies=("message",)))
    assert [s.name for s in named] == ["message", "bm25:message", "hybrid:message"]
    with pytest.raises(ValueError, match="--baseline 'nope' is not one of the systems"):
        compare.comparison_systems(compare.Comparison(baseline="nope"))
