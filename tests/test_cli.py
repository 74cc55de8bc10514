"""The convlab command: exit codes, human and JSON output, show and stats."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from convlab.cli import EXIT_NO_RESULTS, EXIT_OK, EXIT_USAGE, main


@pytest.fixture(scope="module")
def store(transcripts: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli")
    hist = root / "history"
    hist.mkdir()
    for name in ("short.jsonl", "tool_heavy.jsonl"):
        shutil.copy(transcripts / "claude_code" / "spotter_real" / name, hist / name)
    out = root / "store"
    code = main(["index", str(hist), "--store", str(out), "--embedder", "hash", "--quiet"])
    assert code == EXIT_OK
    return out


def test_index_prints_a_closing_summary(
    transcripts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = transcripts / "claude_code" / "spotter_real" / "short.jsonl"
    code = main(
        ["index", str(src), "--store", str(tmp_path / "s"), "--embedder", "hash", "--quiet"]
    )
    out = capsys.readouterr().out
    assert code == EXIT_OK
    assert "1 conversations" in out
    assert "texts:" in out
    assert "embedded" in out


def test_search_json_lines(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["search", "test the hook", "--store", str(store), "-k", "3", "--json"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == EXIT_OK
    rows = [json.loads(line) for line in lines]
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert 1 <= len(rows) <= 3
    assert {"score", "conversation_id", "turn", "question", "location"} <= set(rows[0])


def test_search_human_output(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "test the hook", "--store", str(store), "-k", "2"]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith(" 1. ")
    assert "at: " in out


def test_no_results_exits_1(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["search", "anything", "--store", str(store), "--conversation", "nope"])
    assert code == EXIT_NO_RESULTS
    assert "no results" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "  ", "--store", "{store}"],
        ["search", "x", "--store", "{missing}"],
        ["search", "x", "--store", "{store}", "--since", "yesterday"],
        ["show", "no-such-conversation", "--store", "{store}"],
        ["index", "{missing}", "--store", "{missing}"],
        ["frobnicate"],
    ],
)
def test_user_errors_exit_2_with_one_line(
    argv: list[str], store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a.format(store=store, missing=tmp_path / "missing") for a in argv]
    assert main(args) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert err
    assert "Traceback" not in err


def test_show_and_stats(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "--store", str(store), "--json"]) == EXIT_OK
    stats = json.loads(capsys.readouterr().out)
    assert stats["counts"]["units"] > 0
    from convlab.store import Store

    conv = Store(store).frame("turns")["conversation_id"][0]
    assert main(["show", conv, "--turn", "0", "--budget", "64", "--store", str(store)]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("== turn 0")
    assert "resurrected context:" in out
    used = int(out.split("resurrected context: ")[1].split("/")[0])
    assert used <= 64
