"""``python -m eval.unit_costs``: the cost table of the sample's strategies, without embedding."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from convlab.evaluation.config import EvalConfig
from convlab.evaluation.datasets import load_labelled
from convlab.pipeline.chunks import chunks
from convlab.pipeline.units import units
from eval.unit_costs import main


def test_the_table_counts_the_units_of_each_strategy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "costs.json"
    assert main(["--strategies", "isolated,isolated_window", "--out", str(out)]) == 0
    assert "| strategy | units | units_per_message |" in capsys.readouterr().out
    rows = {r["strategy"]: r for r in json.loads(out.read_text())}
    assert list(rows) == ["isolated", "isolated_window", "all"]
    ch = chunks(load_labelled(None).corpus, EvalConfig().policy)
    replies = ch.filter(pl.col("role") == "assistant").select("conversation_id", "message_index")
    for name in ("isolated", "isolated_window"):
        u = units(ch, name)
        assert rows[name]["units"] == u.height
        assert rows[name]["units_per_assistant_message"] == (
            u.filter(pl.col("role") == "assistant").height / replies.n_unique()
        )
    assert rows["all"]["units"] == rows["isolated"]["units"] + rows["isolated_window"]["units"]
    assert rows["all"]["units_per_assistant_message"] is None


def test_unknown_strategies_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--strategies", "isolated,nope"]) == 2
    assert "unknown strategies ['nope']" in capsys.readouterr().err
