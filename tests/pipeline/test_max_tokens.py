"""``max_tokens`` names the unit's token limit; "budget" is left to resurrection alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from convlab.pipeline.units import units
from convlab.store import StoreConfig
from tests.helpers import chunks_frame

ROWS = [(0, 0, "user", 0, 0, "U0", 10), (0, 1, "assistant", 0, 0, "A0", 30)]


@pytest.mark.parametrize("max_tokens", [7, 257])
def test_units_refuse_a_limit_the_model_cannot_take(max_tokens: int) -> None:
    with pytest.raises(ValueError, match="max_tokens must be between 8 and 256 tokens"):
        units(chunks_frame(ROWS), "isolated", max_tokens)


def test_units_refuse_a_chunk_over_the_limit() -> None:
    # A0 is 30 tokens: 32 with [CLS] and [SEP], over a limit of 31
    with pytest.raises(ValueError, match=r"1 chunks do not fit max_tokens=31 alone \(largest 30"):
        units(chunks_frame(ROWS), "isolated", 31)
    assert units(chunks_frame(ROWS), "isolated", 32)["n_tokens"].to_list() == [12, 32]


@pytest.mark.parametrize("max_tokens", [7, 257])
def test_store_config_validates_max_tokens(max_tokens: int) -> None:
    with pytest.raises(ValueError, match="max_tokens must be between 8 and 256 tokens"):
        StoreConfig(max_tokens=max_tokens)


def test_cli_index_takes_unit_tokens_and_the_old_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from convlab.app.cli import main

    sample = Path(__file__).resolve().parents[2] / "data" / "sample" / "transcripts"
    for flag in ("--unit-tokens", "--max-tokens", "--budget"):
        assert main(["index", str(sample), "--store", str(tmp_path / "s"), flag, "300"]) == 2
        assert "max_tokens must be between 8 and 256 tokens" in capsys.readouterr().err
