"""The redaction benchmark as a study: a redactor that blanks every text, scored by hand."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from convlab.studies.redact_study import RedactBench, corpora, markdown, run

SECRETS = [
    {"id": "s1", "kind": "jwt", "where": "tool_output", "secret": "abcdefghijklmnopq",
     "text": "token abcdefghijklmnopq"},
    {"id": "s2", "kind": "jwt", "where": "user", "secret": "rstuvwxyzABCDEFGH",
     "text": "mine is rstuvwxyzABCDEFGH"},
]  # fmt: skip
LOOKALIKES = [{"id": "l1", "kind": "sha", "where": "user", "text": "commit 0123456789abcdef"}]


def _corpus(folder: Path) -> Path:
    folder.mkdir()
    for name, records in (("secrets", SECRETS), ("lookalikes", LOOKALIKES),
                          ("field_secrets", []), ("field_lookalikes", [])):  # fmt: skip
        (folder / f"{name}.json").write_text(json.dumps(records))
    (folder / "prose.json").write_text(json.dumps({"said": [], "none": []}))
    return folder


def test_a_blanking_redactor_finds_every_secret_and_changes_every_lookalike(
    tmp_path: Path,
) -> None:
    blank = tmp_path / "blank.py"
    blank.write_text("def redact(text):\n    return ''\n")
    config = RedactBench(corpus=_corpus(tmp_path / "secrets"), redactor=f"file:{blank}")
    out, figures = tmp_path / "out", tmp_path / "figures" / "redact.json"
    result = run(config, out, command=["python", "-m", "eval.redact_bench"], figures=figures)
    labelled = result.metrics["corpora"]["all_texts"]
    # both secrets gone, neither marked [REDACTED:jwt]; the one look-alike changed
    assert (labelled["secrets"], labelled["redacted"], labelled["recall"]) == (2, 2, 1.0)
    assert (labelled["right_kind"], labelled["lookalikes"], labelled["false_positives"]) == (
        0,
        1,
        1,
    )
    # only tool calls and outputs redacted: s1 (tool_output) gone, s2 and l1 (user) untouched
    tools = result.metrics["corpora"]["tool_calls_and_outputs_only"]
    assert (tools["recall"], tools["false_positives"]) == (0.5, 0)
    assert json.loads(figures.read_text()) == json.loads((out / "redact_bench.json").read_text())
    table = pl.read_parquet(out / "corpora.parquet")
    assert table["corpus"].to_list()[:3] == ["all_texts", "tool_calls_and_outputs_only", "field"]
    record = json.loads((out / "config.json").read_text())
    assert record["study"] == "redact-bench"
    assert record["data"]["name"] == "secrets"
    assert len(record["data"]["fingerprint"]) == 64
    assert "| all_texts | 2 | 2 | 1.000 | 0 | 1 | 1 |" in result.report.read_text()


def test_the_table_and_page_by_hand() -> None:
    figures = {
        "redactor": "r",
        "a": {"secrets": 4, "redacted": 3, "recall": 0.75, "right_kind": 2, "lookalikes": 5,
              "false_positives": 1},
        "throughput": {"megabytes_per_second": 2.5, "texts_per_second": 1000.0, "texts": 10},
    }  # fmt: skip
    table = corpora(figures)
    assert table.rows() == [("a", 4, 3, 0.75, 2, 5, 1)]
    page = markdown(figures, table)
    assert "| a | 4 | 3 | 0.750 | 2 | 5 | 1 |" in page
    assert "Speed: 2.50 MB/s, 1000 texts/s over 10 texts." in page


def test_a_missing_kingfisher_is_refused(tmp_path: Path) -> None:
    config = RedactBench(corpus=tmp_path, kingfisher=tmp_path / "nope")
    with pytest.raises(ValueError, match="no Kingfisher binary"):
        run(config, tmp_path / "out")
    assert not (tmp_path / "out").exists()
