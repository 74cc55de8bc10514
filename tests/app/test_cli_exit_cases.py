"""The trial's exit-code cases: each is one line on stderr and exit 2, never a traceback or 3.

``search --since 999999999d`` and times at the ends of the calendar raised OverflowError (exit
3; over MCP a blank error); ``judge --data`` given a FIFO, ``/dev/zero`` or an empty folder
crashed in the BM25 build (exit 3); ``eval.run`` with ``"evidence": 3``, ``--every 2**70``,
``--conversations nope``, ``--scope haystack`` on LoCoMo and ``--out /etc/hostname`` ended in a
traceback (exit 1). Also: bm25s's DEBUG lines reached a configured handler, and
``recall@0`` was accepted as a tuning metric.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import polars as pl
import pytest

from convlab.app.cli import main
from convlab.app.cli.eval import main as eval_main
from convlab.app.cli.options import parse_date
from convlab.app.exits import EXIT_USAGE, UsageError
from convlab.paths import sample_data_path
from tests.helpers import locomo_file

SAMPLE = sample_data_path() / "transcripts"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("exits") / "store"
    argv = ["index", str(SAMPLE), "--store", str(directory), "--embedder", "hash", "-q"]
    assert main([*argv, "--system", "bm25:message"]) == 0
    return directory


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    "when",
    ["999999999d", "99999999999999999999h", "9999-12-31T23:59:59-05:00", "0001-01-01T00:00+05:00"],
)
@pytest.mark.parametrize("option", ["--since", "--until"])
def test_dates_outside_the_calendar_exit_2(
    when: str, option: str, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "faiss", "--store", str(store), option, when]) == EXIT_USAGE
    assert "is outside the calendar (years 1 to 9999, in UTC)" in _one_line(capsys)


def test_the_mcp_search_says_why_a_date_is_refused() -> None:
    # the MCP tool turns a UsageError into its error text (convlab.app.cli.mcp_server.call)
    with pytest.raises(UsageError, match=r"since '999999999d' is outside the calendar"):
        parse_date("999999999d", "since")


def test_the_calendar_s_own_ends_still_work(store: Path) -> None:
    assert main(["search", "faiss", "--store", str(store), "--since", "0001-01-01"]) == 0
    assert main(["search", "faiss", "--store", str(store), "--until", "9999-12-31"]) == 0


@pytest.mark.parametrize("data", ["fifo", "/dev/zero", "empty"])
def test_judge_over_data_with_no_conversation_exits_2(
    data: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query_id": "q1", "text": "faiss"}\n')
    if data == "fifo":
        os.mkfifo(tmp_path / "fifo")
    if data == "empty":
        (tmp_path / "empty").mkdir()
    path = data if data.startswith("/") else str(tmp_path / data)
    argv = ["judge", str(queries), "--data", path, "--qrels", str(tmp_path / "qrels.jsonl")]
    assert main([*argv, "--assessor", "ana", "--embedder", "hash"]) == EXIT_USAGE
    assert f"--data {path}: no conversation to judge" in _one_line(capsys)


def _locomo(path: Path, evidence: object) -> Path:
    qa = [{"question": "Where did Ann move?", "answer": "Lisbon", "evidence": evidence}]
    return locomo_file(
        path, [("Ann", "I moved to Lisbon."), ("Bo", "How is it?")], qa, sample_id="c1"
    )


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("evidence", "'evidence' is not a list of dialog ids"),
        ("every", "is not a whole number from 1 to 2,147,483,647"),
        ("conversations", "no such conversations in locomo: ['nope']"),
        ("scope", "has no per-query haystacks"),
        ("out", "File exists"),
    ],
)
def test_eval_run_refuses_in_one_line(
    case: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _locomo(tmp_path / "locomo.json", 3 if case == "evidence" else ["D1:1"])
    out = tmp_path / "hostname"
    out.write_text("host\n")
    argv = ["--data", str(data), "--strategies", "message", "--out", str(tmp_path / "run")]
    extra = {
        "evidence": [],
        "every": ["--every", str(2**70)],
        "conversations": ["--conversations", "nope"],
        "scope": ["--scope", "haystack"],
        "out": ["--out", str(out)],
    }[case]
    try:
        code = eval_main([*argv, *extra])
    except SystemExit as exc:  # argparse's own refusal (--every): exit 2 with its usage
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert expected in err.strip().splitlines()[-1]  # after any progress bar
    assert code == EXIT_USAGE


def test_bm25s_debug_lines_do_not_reach_a_handler(caplog: pytest.LogCaptureFixture) -> None:
    from convlab.index.bm25 import BM25Index

    units = pl.DataFrame({"unit_id": ["a", "b"], "text": ["nginx websockets", "faiss index"]})
    with caplog.at_level(logging.DEBUG):
        BM25Index.build(units)
    assert [r.getMessage() for r in caplog.records if r.name.startswith("bm25s")] == []


def test_a_tuning_metric_with_cutoff_0_is_refused() -> None:
    from convlab.systems.system import Tuning

    with pytest.raises(ValueError, match=r"metric 'recall@0': the cutoff after @ must be at"):
        Tuning(metric="recall@0")
    assert Tuning(metric="recall@1").metric == "recall@1"
