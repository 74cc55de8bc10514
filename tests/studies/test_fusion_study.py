"""The fusion study's fixed mode: settings chosen elsewhere, scored without tuning."""

from __future__ import annotations

from pathlib import Path

import pytest

from convlab.studies.fusion_study import FixedFusion, fixed, parse_fixed


def test_parse_fixed_keeps_the_order_and_the_weights() -> None:
    assert parse_fixed("bm25:message=1, sequential=0.5,turn_pair=0") == {
        "bm25:message": 1.0,
        "sequential": 0.5,
        "turn_pair": 0.0,
    }


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("bm25:message", "is not RUN=WEIGHT"),
        ("=1", "is not RUN=WEIGHT"),
        ("a=x", "could not convert"),
    ],
)
def test_parse_fixed_refuses_what_is_not_run_weight(spec: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_fixed(spec)


def test_a_run_the_folder_does_not_have_is_named(tmp_path: Path) -> None:
    runs = tmp_path / "run" / "runs"
    runs.mkdir(parents=True)
    (runs / "bm25_message.trec").write_text("q1 Q0 d1 1 2.0 bm25_message\n")
    (tmp_path / "run" / "qrels.txt").write_text("q1 0 d1 1\n")
    config = FixedFusion(
        folder=tmp_path / "run",
        out=tmp_path / "out",
        weights=parse_fixed("bm25:message=1,sequential=1"),
        baseline="bm25:message",
    )
    with pytest.raises(ValueError, match="no run sequential; the runs: bm25:message"):
        fixed(config)
