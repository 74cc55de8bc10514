"""The study contract: the standard run folder, and every registered study's place."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import polars as pl

from convlab.studies import STUDIES
from convlab.studies.contract import config_record, source_record, write_study
from convlab.systems.system import Tuning

TESTS = Path(__file__).resolve().parent


@dataclass(frozen=True, slots=True)
class Toy:
    study: ClassVar[str] = "toy"
    folder: Path
    tuning: Tuning
    k: tuple[int, ...] = (1, 5)


def test_the_config_is_written_as_plain_json() -> None:
    config = Toy(folder=Path("runs/a"), tuning=Tuning(weights=(0.5,), samples=2))
    record = config_record(config)
    assert record["folder"] == "runs/a"
    assert record["k"] == [1, 5]
    assert record["tuning"]["weights"] == [0.5]
    assert record["tuning"]["samples"] == 2


def test_the_standard_run_folder(tmp_path: Path) -> None:
    source = tmp_path / "run"
    source.mkdir()
    (source / "config.json").write_text(
        json.dumps({"data": {"name": "tiny", "fingerprint": "f" * 64}, "commit": "c" * 40})
    )
    frame = pl.DataFrame({"query_id": ["c1:q0", "c2:q0"], "value": [1.0, 0.0]})
    config = Toy(folder=source, tuning=Tuning())
    result = write_study(
        tmp_path / "out",
        config,
        metrics={"recall@5": 0.5},  # (1 + 0) / 2
        report="# Toy\n",
        frames={"per_query": frame},
        command=["python", "-m", "eval.toy", "--out", "x y"],
        data=source_record(source),
    )
    out = tmp_path / "out"
    record = json.loads((out / "config.json").read_text())
    assert record["study"] == "toy"
    assert record["command"] == "python -m eval.toy --out 'x y'"
    assert record["commit_state"] in ("clean", "modified", "unknown")
    assert record["data"]["name"] == "tiny"
    assert record["data"]["fingerprint"] == "f" * 64
    assert record["data"]["sources"][0]["commit"] == "c" * 40
    assert "polars" in record["versions"]
    assert json.loads((out / "metrics.json").read_text()) == {"recall@5": 0.5}
    assert pl.read_parquet(out / "per_query.parquet").equals(frame)
    assert result.report.read_text() == "# Toy\n"


def test_every_registered_study_names_its_config_and_has_a_test() -> None:
    assert set(STUDIES.names()) >= {"confidence", "finetune-cv", "frontier", "fusion",
                                    "fusion-fixed", "levers", "orderings", "policy-cv",
                                    "redact-bench", "resurrection-grid", "routing",
                                    "select-cv"}  # fmt: skip
    for name, study in STUDIES.items():
        assert study.name == name == study.config.study
        module = study.run.__module__.rpartition(".")[2]
        assert (TESTS / f"test_{module}.py").is_file(), f"{name}: no tests/studies/test_{module}.py"
        assert (TESTS.parents[1] / "eval" / f"{study.program.removeprefix('eval.')}.py").is_file()
