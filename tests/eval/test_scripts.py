"""Every ``eval/`` script runs: its ``--help``, and a tiny run on tiny inputs.

The scripts run as programs in a subprocess (``tests/eval/launch.py``: ``python -m eval.X``
semantics, the model replaced by a 384-wide hash embedder, data from a tiny LoCoMo file under
``CONVLAB_DATA``), all in one process so that the imports are paid once; each test then checks
what its script wrote. Tests never import ``eval/``. ``eval.lme_curve`` is not a program (the
library of ``eval.bench_longmemeval``, run by ``tests/eval/test_bench_longmemeval.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from convlab.paths import REPO_ROOT, sample_data_path
from tests.evaluation.test_lme_haystacks import _question

SCRIPTS = sorted(
    p.stem
    for p in (REPO_ROOT / "eval").glob("*.py")
    if p.stem not in ("__init__", "lme_curve") and "__main__" in p.read_text()
)
LAUNCH = Path(__file__).with_name("launch.py")

# a tiny LoCoMo: two conversations, two sessions each, questions whose evidence is in them
_SAID = [
    ("Ann", "I adopted a cat named Tom last week."),
    ("Bo", "Lovely! What colour is Tom?"),
    ("Ann", "He is grey with white paws."),
    ("Bo", "I started a pottery class on Mondays."),
    ("Ann", "Pottery sounds fun, do you make bowls?"),
    ("Bo", "Mostly mugs so far, and one vase."),
]


def _conversation(sample_id: str, shift: int) -> dict[str, Any]:
    said = _SAID[shift:] + _SAID[:shift]
    conversation: dict[str, Any] = {"speaker_a": "Ann", "speaker_b": "Bo"}
    for s, part in enumerate((said[:3], said[3:]), start=1):
        conversation[f"session_{s}_date_time"] = f"1:56 pm on {s} May, 2023"
        conversation[f"session_{s}"] = [
            {"speaker": who, "dia_id": f"D{s}:{i}", "text": text}
            for i, (who, text) in enumerate(part, start=1)
        ]
    qa = [
        {
            "question": "What is the cat called?",
            "answer": "Tom",
            "evidence": ["D1:1"],
            "category": 1,
        },
        {"question": "What does Bo make?", "answer": "mugs", "evidence": ["D2:3"], "category": 2},
    ]
    return {"sample_id": sample_id, "conversation": conversation, "qa": qa}


def _own_texts(conversation: dict[str, Any]) -> dict[str, Any]:
    """``conversation`` with its sample id in every message and question: no text shared."""
    tag = conversation["sample_id"]
    for turns in conversation["conversation"].values():
        if isinstance(turns, list):
            for turn in turns:
                turn["text"] = f"{turn['text']} ({tag})"
    for qa in conversation["qa"]:
        qa["question"] = f"{qa['question']} ({tag})"
    return conversation


def _jobs(tmp: Path, locomo: Path) -> list[tuple[str, list[str]]]:
    """The tiny run of every script, in order (later ones read earlier ones' folders)."""
    sample, run, cache, bench = str(sample_data_path()), tmp / "run", str(tmp / "cache"), tmp / "b"
    strategies = "message,sequential,turn_pair,whole_turn"
    return [
        ("convlab", ["index", str(locomo), "--store", str(tmp / "store"), "--embedder", "hash",
                     "--quiet"]),
        ("eval.run", ["--data", str(locomo), "--strategies", strategies, "--budgets", "128,512",
                      "--resurrection", "unit,doc", "--out", str(run), "--cache", cache]),
        ("eval.run", ["--strategies", "nope", "--out", str(tmp / "refused")]),
        ("eval.check_thresholds", [str(run), "--set", "low", "--thresholds", str(tmp / "t.toml")]),
        ("eval.check_thresholds", [str(run), "--set", "high", "--thresholds", str(tmp / "t.toml")]),
        ("eval.orderings", ["--run", f"a={run}", "--run", f"b={run}", "--systems",
                            "message,bm25:message", "--out", str(tmp / "orderings")]),
        ("eval.resurrection_grid", [str(run), "--out", str(tmp / "grid")]),
        ("eval.policy_cv", [str(run), str(tmp / "store"), "--budgets", "128,512",
                            "--reference-budget", "512", "--out", str(tmp / "policy_cv")]),
        ("eval.policy_cv", [str(tmp / "nowhere"), "--out", str(tmp / "policy_cv_refused")]),
        ("eval.fuse_runs", [str(run), "--out", str(tmp / "fusion"), "--folds", "2",
                            "--samples", "2"]),
        ("eval.fuse_runs", [str(run), "--out", str(tmp / "fixed"), "--fixed",
                            "bm25:message=1,sequential=0.5"]),
        ("eval.routing", [str(run), "--data", str(locomo), "--out", str(tmp / "routing"),
                          "--folds", "2", "--samples", "4", "--min-train", "1"]),
        ("eval.routing", [str(run), "--data", str(locomo), "--out", str(tmp / "routed"),
                          "--transfer-from", str(run), "--transfer-data", str(locomo),
                          "--folds", "2", "--samples", "4", "--min-train", "1"]),
        ("eval.routing", [str(run), "--data", str(locomo), "--out", str(tmp / "unrouted"),
                          "--transfer-from", str(run)]),
        ("eval.finetune_cv", ["--transfer", str(run), "--base", str(run),
                              "--out", str(tmp / "ft_transfer"), "--cache", cache]),
        ("eval.finetune_cv", ["--transfer", str(run), "--out", str(tmp / "ft_refused"),
                              "--cache", cache]),
        ("eval.unit_costs", ["--data", sample, "--strategies", "message,turn_pair",
                             "--out", str(tmp / "costs.json")]),
        ("eval.lme_haystacks", ["--oracle", str(tmp / "oracle.json"), "--sessions", "2",
                                "--out", str(tmp / "haystacks.json")]),
        ("eval.redact_bench", ["--min-seconds", "0", "--texts", sample,
                               "--out", str(tmp / "redact.json"),
                               "--folder", str(tmp / "redact_study")]),
        ("eval.bench_text_format", ["--data", str(locomo), "--cache", cache,
                                    "--out", str(bench / "text_format.json")]),
        ("eval.bench_index", ["--turns", "40", "--out", str(bench)]),
        ("eval.bench_load", ["--messages", "200", "--out", str(bench)]),
        ("eval.bench_search_open", ["--units", "300", "--sessions", "4", "--turns", "40",
                                    "--repeat", "1", "--out", str(bench)]),
        ("eval.bench_verify", ["--units", "300", "--sessions", "4", "--turns", "40",
                               "--repeat", "1", "--out", str(bench)]),
        ("eval.bench_store", ["--copies", "2", "--embedder", "hash", "--data", str(locomo),
                              "--out", str(bench / "store")]),
        ("eval.bench_search", ["--sizes", "300", "--queries", "5", "--hnsw-max", "300",
                               "--out", str(bench)]),
        ("eval.bench_device", ["--texts", "20", "--out", str(bench)]),
        ("eval.bench_ivfpq", ["--size", "600", "--shard", "300", "--queries", "5",
                              "--nlist", "4", "--m", "8", "--nbits", "4",
                              "--base-cache", str(tmp / "base.npy"), "--work", str(tmp / "ivf"),
                              "--out", str(bench)]),
        ("eval.select_cv", [str(run), "--candidates", "message,bm25:message", "--name",
                            "chosen", "--folds", "2", "--out", str(tmp / "select")]),
        ("eval.select_cv", [str(run), "--name", "chosen", "--out", str(tmp / "select_refused")]),
        ("eval.levers", [str(tmp / "levers.toml"), "--runs", str(tmp),
                         "--out", str(tmp / "levers" / "levers.md"),
                         "--folder", str(tmp / "levers_study")]),
        ("eval.levers", [str(tmp / "bad_levers.toml"), "--runs", str(tmp),
                         "--out", str(tmp / "bad_levers.md"),
                         "--folder", str(tmp / "bad_levers_study")]),
        ("eval.answer_visible", ["--store", str(tmp / "store"), "--conversation", "conv-26",
                                 "-n", "2", "-k", "20"]),
        ("eval.confidence", ["--data", sample, "--data", str(tmp / "noanswer"),
                             "--embedder", "hash", "--cache", cache, "--folds", "2",
                             "--out", str(tmp / "confidence"),
                             "--model", str(tmp / "confidence" / "model.json")]),
        ("eval.confidence", ["--keep", "1.5", "--out", str(tmp / "confidence_refused")]),
        ("eval.bench_stages", ["--json", str(bench / "stages.json"), "--", "--data", sample,
                               "--strategies", "message", "--budgets", "128",
                               "--out", str(tmp / "staged"), "--cache", cache]),
    ]  # fmt: skip


def _model_jobs(tmp: Path) -> list[tuple[str, list[str]]]:
    """The tiny runs that need the real model (or Ray's workers, which load it themselves)."""
    bench = str(tmp / "b")
    return [
        ("eval.bench_embed", ["--conversations", "1", "--repeats", "1", "--out", bench]),
        ("eval.bench_onnx", ["--texts", "20", "--chunk", "10", "--latency-runs", "1",
                             "--skip-throughput", "--out", bench]),
        ("eval.bench_ray", ["--n", "20", "--actors", "1", "--rounds", "1", "--out", bench]),
        ("eval.bench_threads", ["--texts", "8", "--chunk", "4", "--threads", "1,0",
                                "--out", bench]),
        ("eval.finetune_cv", ["--folds", "2", "--batch-size", "2", "--max-seq-length", "16",
                              "--data", str(tmp / "ft_locomo.json"),
                              "--out", str(tmp / "ft"), "--cache", str(tmp / "cache"),
                              "--models", str(tmp / "models")]),
        ("eval.bench_late", ["--conversations", "1", "--windows", "256", "--backend", "torch",
                             "--out", bench]),
    ]  # fmt: skip


def _launch(
    jobs: list[tuple[str, list[str]]], tmp: Path, env: dict[str, str], *more: str
) -> list[Any]:
    (tmp / "jobs.json").write_text(json.dumps(jobs))
    done = subprocess.run(
        [sys.executable, str(LAUNCH), str(tmp / "jobs.json"), str(tmp / "results.json"), *more],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
        env=env,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results: list[Any] = json.loads((tmp / "results.json").read_text())
    return results


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    import os

    data = tmp_path_factory.mktemp("data")
    (data / "locomo").mkdir()
    locomo = [_conversation("conv-26", 0), _conversation("conv-30", 3)]
    (data / "locomo" / "locomo10.json").write_text(json.dumps(locomo))
    return {
        **os.environ,
        "CONVLAB_DATA": str(data),
        "PYTHONPATH": str(REPO_ROOT),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "CUDA_VISIBLE_DEVICES": "",
    }


@pytest.fixture(scope="module")
def launched(
    tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]
) -> tuple[Path, list[Any]]:
    """Every script's ``--help``, then the tiny runs: their folder, and each job's result."""
    tmp = tmp_path_factory.mktemp("tiny")
    (tmp / "t.toml").write_text(
        '[low.message]\n"recall@5" = 0.0\n\n[high.message]\n"recall@5" = 1.5\n'
    )
    (tmp / "levers.toml").write_text(
        '[[levers]]\nlever = "L"\ndata = "tiny"\nrun = "run"\nsystem = "sequential"\n'
        'baseline = "message"\n'
    )
    (tmp / "bad_levers.toml").write_text('[[levers]]\nlever = "L"\nspeed = 1\n')
    oracle = [
        _question("q1", {"answer_a": ("2023/01/01 (Sun) 10:00", "alpha one. alpha two.")}),
        _question("q2", {"answer_b": ("2023/02/01 (Wed) 10:00", "beta one. beta two.")}),
        _question("q3", {"answer_c": ("2023/03/01 (Wed) 10:00", "gamma one. gamma two.")}),
    ]
    (tmp / "oracle.json").write_text(json.dumps(oracle))
    noanswer = tmp / "noanswer"  # the sample's transcripts, asked what they never say
    noanswer.mkdir()
    (noanswer / "transcripts").symlink_to(sample_data_path() / "transcripts")
    asked = ["which kafka topic carries payments", "how did we shard by tenant", "the cdn we chose"]
    (noanswer / "queries.jsonl").write_text(
        "".join(
            json.dumps({"query_id": f"na-q{i}", "text": t, "category": "no-answer"}) + "\n"
            for i, t in enumerate(asked)
        )
    )
    helps: list[tuple[str, list[str]]] = [(f"eval.{s}", ["--help"]) for s in SCRIPTS]
    locomo = Path(env["CONVLAB_DATA"]) / "locomo" / "locomo10.json"
    return tmp, _launch([*helps, *_jobs(tmp, locomo)], tmp, env)


@pytest.fixture(scope="module")
def helped(launched: tuple[Path, list[Any]]) -> dict[str, Any]:
    """Every script's ``--help``, by script."""
    return {r["module"].removeprefix("eval."): r for r in launched[1][: len(SCRIPTS)]}


@pytest.fixture(scope="module")
def tiny(launched: tuple[Path, list[Any]]) -> tuple[Path, list[Any]]:
    """The tiny runs: the folder they wrote into, and each job's result in order."""
    return launched[0], launched[1][len(SCRIPTS) :]


def _result(tiny: tuple[Path, list[Any]], module: str, nth: int = 0) -> dict[str, Any]:
    found = [r for r in tiny[1] if r["module"] == module]
    result: dict[str, Any] = found[nth]
    return result


def _ok(tiny: tuple[Path, list[Any]], module: str, nth: int = 0) -> dict[str, Any]:
    result = _result(tiny, module, nth)
    assert result["code"] == 0, (result["out"][-2000:], result["err"][-4000:])
    return result


def test_every_script_is_run_here() -> None:
    jobs = {
        m.removeprefix("eval.")
        for m, _ in [*_jobs(Path("/x"), Path("/y")), *_model_jobs(Path("/x"))]
    }
    own_file = {"bench_longmemeval", "pages", "frontier", "reproduce"}  # own test_*.py files
    assert jobs - {"convlab"} | own_file == set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_help(helped: dict[str, Any], script: str) -> None:
    result = helped[script]
    assert result["code"] == 0, result["err"][-3000:]
    assert result["out"].startswith(f"usage: python -m eval.{script} ")


def test_run_writes_a_run_folder_and_refuses_bad_options(tiny: tuple[Path, list[Any]]) -> None:
    _ok(tiny, "eval.run")
    run = tiny[0] / "run"
    summary = json.loads((run / "metrics.json").read_text())["summary"]
    systems = {r["system"] for r in summary}
    assert {"message", "whole_turn", "bm25:message", "fusion:convex", "fusion:rrf"} <= systems
    assert (run / "policy_budgets.parquet").is_file()
    assert (run / "qrels.txt").read_text()
    config = json.loads((run / "config.json").read_text())
    assert config["command"].startswith("python -m eval.run --data ")  # what made the run
    assert config["commit_state"] in ("clean", "modified", "unknown")
    assert (config["commit"] is not None) == (config["commit_state"] == "clean")
    refused = _result(tiny, "eval.run", 1)
    assert refused["code"] == 2
    assert refused["err"].startswith("python -m eval.run: unknown strategies ['nope']")
    assert not (tiny[0] / "refused").exists()


def test_check_thresholds(tiny: tuple[Path, list[Any]]) -> None:
    assert _ok(tiny, "eval.check_thresholds")["out"] == "thresholds low: all 1 met\n"
    high = _result(tiny, "eval.check_thresholds", 1)
    assert high["code"] == 1
    assert "below threshold: message recall@5 = " in high["err"]


def test_orderings(tiny: tuple[Path, list[Any]]) -> None:
    _ok(tiny, "eval.orderings")
    record = json.loads((tiny[0] / "orderings" / "orderings.json").read_text())
    assert record["systems"] == ["bm25:message", "message"]
    assert len(record["pairs"]) == 2  # one pair, on each of the two runs


def test_resurrection_grid(tiny: tuple[Path, list[Any]]) -> None:
    _ok(tiny, "eval.resurrection_grid")
    grid = json.loads((tiny[0] / "grid" / "grid.json").read_text())
    assert grid["source"].endswith("policy_budgets.parquet")
    assert grid["policies"] == ["unit", "doc"]
    assert grid["command"].startswith("python -m eval.resurrection_grid ")


def test_policy_cv(tiny: tuple[Path, list[Any]]) -> None:
    _ok(tiny, "eval.policy_cv")
    result = json.loads((tiny[0] / "policy_cv" / "policy_cv.json").read_text())
    assert result["command"].startswith("python -m eval.policy_cv ")
    run = result["runs"][str(tiny[0] / "run")]
    # two conversations: two folds, each choosing on the other conversation's queries
    assert {b: m["folds"] for b, m in run["budgets"].items()} == {"128": 2, "512": 2}
    assert (run["reference"]["system"], run["reference"]["budget"]) == ("message", 512)
    assert set(run["comparison"]) == {"budget", "coverage", "answer_contained"}
    assert "does not exist" in result["runs"][str(tiny[0] / "store")]["error"]
    assert "| 512 | 2 |" in (tiny[0] / "policy_cv" / "policy_cv.md").read_text()
    pq = pl.read_parquet(tiny[0] / "policy_cv" / "run" / "per_query.parquet")
    assert set(pq["system"]) == {"policy CV@512", "message+unit@512"}
    folder = tiny[0] / "policy_cv" / "run"
    groups = pl.read_parquet(folder / "groups.parquet")
    assert groups.group_by("group").agg(pl.col("fold").n_unique())["fold"].to_list() == [1, 1]
    record = json.loads((folder / "config.json").read_text())["groups"]
    assert record == {"rule": "conversation", "groups": 2, "folds": 2, "queries": 4}
    assert pq.filter(pl.col("metric") == "coverage").group_by("system").len()["len"].to_list() == [
        4,
        4,
    ]
    refused = _result(tiny, "eval.policy_cv", 1)
    assert refused["code"] == 2
    assert (
        refused["err"].strip() == f"python -m eval.policy_cv: {tiny[0] / 'nowhere'}: no such folder"
    )


def test_fuse_runs(tiny: tuple[Path, list[Any]]) -> None:
    _ok(tiny, "eval.fuse_runs")
    report = json.loads((tiny[0] / "fusion" / "fusion.json").read_text())
    assert (report["folds"], report["samples"], report["tuned_on"]) == (2, 2, "recall@5")
    kinds = {s["kind"] for s in report["systems"]}
    assert kinds == {"single", "reference", "fusion"}
    assert pl.read_parquet(tiny[0] / "fusion" / "choices.parquet")["fold"].n_unique() == 2
    _ok(tiny, "eval.fuse_runs", 1)
    fixed = json.loads((tiny[0] / "fixed" / "fixed.json").read_text())
    assert fixed["weights"] == {"bm25:message": 1.0, "sequential": 0.5}
    fixed_pq = pl.read_parquet(tiny[0] / "fixed" / "per_query.parquet")
    assert fixed_pq["system"].n_unique() == 3  # the baseline, the other run, the fusion


def test_select_cv(tiny: tuple[Path, list[Any]]) -> None:
    _ok(tiny, "eval.select_cv")
    out = tiny[0] / "select"
    choices = pl.read_parquet(out / "choices.parquet")
    assert choices["test_groups"].sort().to_list() == ["conv-26", "conv-30"]
    assert set(choices["system"]) <= {"message", "bm25:message"}
    pq = pl.read_parquet(out / "per_query.parquet")
    chosen = pq.filter((pl.col("system") == "chosen") & (pl.col("metric") == "recall@5"))
    assert chosen.height == 4  # each of the 4 queries once, from its own fold's choice
    # the run folder and the selection name the same two conversations as groups, each a fold
    record = json.loads((out / "config.json").read_text())["groups"]
    assert record == {"rule": "conversation", "groups": 2, "folds": 2, "queries": 4}
    made = pl.read_parquet(out / "groups.parquet")
    assert sorted(made["group"].unique()) == ["conv-26", "conv-30"]
    assert json.loads((tiny[0] / "run" / "config.json").read_text())["groups"]["groups"] == 2
    assert json.loads((out / "config.json").read_text())["command"].startswith(
        "python -m eval.select_cv "
    )
    refused = _result(tiny, "eval.select_cv", 1)
    assert refused["code"] == 2
    assert refused["err"].strip().endswith("give --match or --candidates (one of them)")
    assert not (tiny[0] / "select_refused").exists()


def test_levers(tiny: tuple[Path, list[Any]]) -> None:
    _ok(tiny, "eval.levers")
    rows = json.loads((tiny[0] / "levers" / "levers.json").read_text())
    assert [(r["system"], r["baseline"], r["queries"]) for r in rows] == [
        ("sequential", "message", 4)
    ]
    page = (tiny[0] / "levers" / "levers.md").read_text()
    assert "| L | tiny | `sequential` vs `message` | recall@5 | 4 |" in page
    assert "python -m eval.run --data " in page  # the run's command, from its config.json
    study = tiny[0] / "levers_study"
    assert (study / "report.md").read_text() == page
    assert json.loads((study / "config.json").read_text())["study"] == "levers"
    bad = _result(tiny, "eval.levers", 1)
    assert bad["code"] == 2
    assert bad["err"].strip() == (
        f"python -m eval.levers: {tiny[0] / 'bad_levers.toml'}: lever 1: unknown key(s) speed"
    )
    assert not (tiny[0] / "bad_levers.md").exists()
    assert not (tiny[0] / "bad_levers_study").exists()


def test_routing(tiny: tuple[Path, list[Any]]) -> None:
    _ok(tiny, "eval.routing")
    report = json.loads((tiny[0] / "routing" / "routing.json").read_text())
    assert report["mode"] == "cv"
    assert report["queries"] == 4
    assert {r["system"] for r in report["comparisons"]} == {"routing:gold", "routing:predicted"}
    assert 0.0 <= report["classifier_heldout"]["accuracy"] <= 1.0
    assert pl.read_parquet(tiny[0] / "routing" / "choices.parquet")["fold"].n_unique() == 2
    _ok(tiny, "eval.routing", 1)
    routed = json.loads((tiny[0] / "routed" / "routing.json").read_text())
    assert routed["mode"] == "transfer"
    assert sum(r["len"] for r in routed["routed_types"]) == 4
    refused = _result(tiny, "eval.routing", 2)
    assert refused["code"] == 2
    assert "transfer needs both" in refused["err"]


def test_finetune_cv_transfer(tiny: tuple[Path, list[Any]]) -> None:
    """--transfer compares two eval.run folders; the same folder twice: every delta is 0."""
    _ok(tiny, "eval.finetune_cv")
    family = pl.read_parquet(tiny[0] / "ft_transfer" / "comparison.parquet")
    views = family.filter(pl.col("system").str.starts_with("ft:"))
    assert set(views["system"]) == {"ft:message", "ft:sequential", "ft:turn_pair"}
    assert views["delta"].abs().max() == 0.0
    values = pl.read_parquet(tiny[0] / "ft_transfer" / "per_query.parquet")

    def fused(name: str) -> list[float]:
        return values.filter(pl.col("system") == name).sort("query_id", "metric")["value"].to_list()

    # the fixed fusion with the ft: views in place of the same runs: the same values
    assert fused("fusion:convex-ft") == fused("fusion:convex-fixed")
    refused = _result(tiny, "eval.finetune_cv", 1)
    assert refused["code"] == 2
    assert "--transfer needs --base" in refused["err"]


def test_unit_costs(tiny: tuple[Path, list[Any]]) -> None:
    _ok(tiny, "eval.unit_costs")
    rows = json.loads((tiny[0] / "costs.json").read_text())
    assert [r["strategy"] for r in rows][:2] == ["message", "turn_pair"]


def test_lme_haystacks(tiny: tuple[Path, list[Any]]) -> None:
    _ok(tiny, "eval.lme_haystacks")
    made = json.loads((tiny[0] / "haystacks.json").read_text())
    assert [len(q["haystack_session_ids"]) for q in made] == [2, 2, 2]


def test_redact_bench(tiny: tuple[Path, list[Any]]) -> None:
    _ok(tiny, "eval.redact_bench")
    result = json.loads((tiny[0] / "redact.json").read_text())
    assert result["redactor"] == "convlab"
    assert result["corpus"].endswith("tests/fixtures/secrets")
    assert result["all_texts"]["secrets"] > 0
    assert result["throughput"]["texts"] > 0
    study = tiny[0] / "redact_study"
    assert json.loads((study / "redact_bench.json").read_text()) == result
    assert json.loads((study / "config.json").read_text())["study"] == "redact-bench"


@pytest.mark.parametrize(
    ("script", "wrote"),
    [
        ("bench_text_format", "text_format.json"),
        ("bench_index", "bench_index.json"),
        ("bench_load", "bench_load.json"),
        ("bench_search_open", "bench_search_open.json"),
        ("bench_verify", "bench_verify.json"),
        ("bench_search", "bench_search.json"),
        ("bench_store", "store/bench_store.json"),
        ("bench_device", "bench_device.json"),
        ("bench_ivfpq", "bench_ivfpq_600.json"),
        ("bench_stages", "stages.json"),
    ],
)
def test_benchmarks_write_their_json(tiny: tuple[Path, list[Any]], script: str, wrote: str) -> None:
    _ok(tiny, f"eval.{script}")
    assert json.loads((tiny[0] / "b" / wrote).read_text())


def test_confidence(tiny: tuple[Path, list[Any]]) -> None:
    _ok(tiny, "eval.confidence")
    out = tiny[0] / "confidence"
    summary = json.loads((out / "summary.json").read_text())
    held = {r["dataset"]: r for r in summary["held_out"]}
    assert held["sample"]["no_answer"] == 0
    assert held["noanswer"]["no_answer"] == 3
    assert held["sample"]["queries"] == 68
    assert summary["model"]["command"].startswith("python -m eval.confidence --data ")
    assert (out / "confidence.md").read_text().startswith("# Search confidence")
    refused = _result(tiny, "eval.confidence", 1)
    assert refused["code"] == 2
    assert "keep is 1.5" in refused["err"]


def test_answer_visible(tiny: tuple[Path, list[Any]]) -> None:
    _ok(tiny, "convlab")  # the store it searches
    result = _ok(tiny, "eval.answer_visible")
    assert "convlab search:" not in result["err"]
    figures = json.loads(result["out"].splitlines()[-1])
    assert (figures["conversations"], figures["questions"]) == (["conv-26"], 2)
    # -k 20 shows every message of the store (12): "Tom" and "mugs" are both on the screen
    assert figures["human_visible"] == figures["json_visible"] == 2
    assert figures["answer_in_top_k_doc"] == figures["human_visible_of_in_doc"] == 2


@pytest.mark.model
@pytest.mark.slow
def test_the_model_benchmarks_write_their_json(tmp_path: Path, env: dict[str, str]) -> None:
    """bench_embed, bench_onnx and bench_ray time the real model: a tiny run of each."""
    # the fine-tuning refuses a training text that is a test text: each conversation its own
    own = [_own_texts(_conversation("conv-26", 0)), _own_texts(_conversation("conv-30", 3))]
    (tmp_path / "ft_locomo.json").write_text(json.dumps(own))
    results = _launch(_model_jobs(tmp_path), tmp_path, env, "--model")
    wrote = ("bench_embed.json", "bench_onnx.json", "bench_ray_20.json")
    for result, name in zip(results[:3], wrote, strict=True):
        assert result["code"] == 0, result["err"][-3000:]
        assert json.loads((tmp_path / "b" / name).read_text())
    assert results[3]["code"] == 0, results[3]["err"][-3000:]
    assert json.loads((tmp_path / "b" / "bench_threads.json").read_text())["fastest"]
    # the fine-tuning CV: a model per fold in --models, each fold's held-out runs, one per view
    assert results[4]["code"] == 0, results[4]["err"][-3000:]
    config = json.loads((tmp_path / "ft" / "config.json").read_text())
    assert [r["test_conversations"] for r in config["fold_records"]] in (
        [["conv-26"], ["conv-30"]],
        [["conv-30"], ["conv-26"]],
    )
    assert all(r["triples"] == 2 for r in config["fold_records"])  # the other conversation's
    assert len(list((tmp_path / "models" / "finetuned").glob("all-MiniLM-L6-v2-ft-*"))) == 2
    for fold in (tmp_path / "ft" / "folds").iterdir():
        assert len(list(fold.glob("ft_*.trec"))) == 3
    # the late-chunking benchmark: exit 1 when a target is missed, its JSON written either way
    assert results[4]["code"] in (0, 1), results[4]["err"][-3000:]
    late = json.loads((tmp_path / "b" / "bench_late.json").read_text())
    assert set(late["targets"]) == {"tokens_per_text_token", "embed_cpu_ratio"}
    assert late["systems"]["late:fusion:convex"]["warm_forward_calls"] == 0
