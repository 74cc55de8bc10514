"""``eval.run --protocol``: LongMemEval's official protocol beside convlab's own."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import convlab.embed
from convlab.app.cli import eval as eval_cli
from convlab.app.exits import EXIT_OK, EXIT_USAGE
from convlab.embed import HashEmbedder
from convlab.errors import LoadError
from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.lme_bm25 import REFERENCE
from tests.helpers import locomo_file

FIXTURE = Path(__file__).parent.parent / "fixtures" / "longmemeval" / "longmemeval_fixture.json"


@pytest.fixture
def hash_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison embeds with the hash embedder (these tests are about the protocol)."""
    monkeypatch.setattr(
        convlab.embed, "minilm_embedder", lambda backend="torch", **_: HashEmbedder(16)
    )


def _argv(tmp_path: Path, *more: str) -> list[str]:
    return ["--out", str(tmp_path / "out"), "--cache", str(tmp_path / "c"), *more]


def test_data_that_is_not_longmemeval_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = locomo_file(tmp_path / "l.json", [("Ann", "I adopted a cat"), ("Bo", "Nice")])
    argv = _argv(tmp_path, "--protocol", "longmemeval", "--strategies", "message")
    for more in (["--data", str(data)], []):  # a LoCoMo-family file, the bundled sample
        assert eval_cli.main([*argv, *more]) == EXIT_USAGE
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "the longmemeval protocol is LongMemEval's own: it needs a LongMemEval" in err
    assert f"python -m eval.run: {data}:0: the longmemeval protocol" in compare_err(
        [*argv, "--data", str(data)], capsys
    )
    with pytest.raises(LoadError, match="it needs a LongMemEval question file"):
        load_labelled(data, protocol="longmemeval")


def compare_err(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    eval_cli.main(argv)
    return capsys.readouterr().err


def test_under_the_official_protocol_docs_are_user_messages_with_the_official_gold() -> None:
    data = load_labelled(FIXTURE, protocol="longmemeval")
    relevant = dict(data.queries.select("query_id", "relevant").iter_rows())
    assert relevant == {
        "q1": ["answer_1a:m0"],
        "q2": ["answer_2a:m0", "answer_2b:m0"],
        "q3_abs": [],
    }
    sessions = (
        {q: sorted(r) for q, r in data.sessions.iter_rows()} if data.sessions is not None else {}
    )
    assert sessions == {"q1": ["answer_1a"], "q2": ["answer_2a", "answer_2b"], "q3_abs": []}
    assert set(data.corpus.conversations["doc_kind"]) == {"message"}


@pytest.mark.usefixtures("hash_model")
def test_a_run_under_the_official_protocol_writes_its_measures_beside_the_reference(
    tmp_path: Path,
) -> None:
    argv = _argv(
        tmp_path,
        "--data",
        str(FIXTURE),
        "--protocol",
        "longmemeval",
        "--strategies",
        "message,whole_turn",
        "--budgets",
        "128",
    )
    assert eval_cli.main(argv) == EXIT_OK
    out = tmp_path / "out"
    config = json.loads((out / "config.json").read_text())
    assert config["config"]["protocol"] == "longmemeval"
    assert config["config"]["policy"]["assistant_text"] is False
    # the user messages only: 7 in the 6 sessions (answer_1a has 2), one unit each
    assert config["units"]["message"] == 7
    report = (out / "report.md").read_text().splitlines()
    assert report[2].startswith("**Protocol: `longmemeval`**, LongMemEval's own")
    per_q = pl.read_parquet(out / "official_per_query.parquet")
    assert set(per_q["system"]) >= {"message", "whole_turn", REFERENCE}
    assert set(per_q["level"]) == {"turn", "session", "session_keys"}
    assert "### session keys (official session granularity), strict" in "\n".join(report)
    # every ranking holds every key (completed): all gold keys are within 50 of <= 5 keys
    at50 = per_q.filter((pl.col("metric") == "recall_all@50") & (pl.col("query_id") != "q3_abs"))
    assert at50["value"].to_list() == [1.0] * at50.height
    summary = pl.read_parquet(out / "official_summary.parquet")
    n = dict(summary.select("average", "queries").unique().iter_rows())
    assert n == {"strict": 2, "non_abstention": 2}
    sig = pl.read_parquet(out / "official_significance.parquet")
    assert {"system", "level", "average", "metric", "p_holm", "significant"} <= set(sig.columns)
    assert "official" in json.loads((out / "metrics.json").read_text())


@pytest.mark.usefixtures("hash_model")
def test_the_default_protocol_is_named_first_in_the_report(tmp_path: Path) -> None:
    argv = _argv(tmp_path, "--data", str(FIXTURE), "--strategies", "message", "--budgets", "128")
    assert eval_cli.main(argv) == EXIT_OK
    out = tmp_path / "out"
    report = (out / "report.md").read_text().splitlines()
    assert report[2].startswith("**Protocol: `convlab`**, convlab's own: docs are the data's")
    assert "`--protocol longmemeval` gives those" in report[3]
    assert json.loads((out / "config.json").read_text())["config"]["protocol"] == "convlab"
    assert not (out / "official_per_query.parquet").exists()
