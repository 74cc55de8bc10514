"""The frontier table and the rule that the default follows the measurement, on hand-made runs.

Two data sets of four queries; the default ``d`` embeds 5 tokens per token of text in 40
CPU-seconds; ``near`` loses 0.005 recall@5 at a tenth of the cost; ``far`` loses 0.25 on one
data set; ``dear`` holds but costs more. Every expected value is worked out below by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from convlab.evaluation.provenance import RunError
from convlab.studies.frontier import (
    Frontier,
    FrontierRun,
    choose_default,
    frontier_markdown,
    frontier_table,
    run,
)

SHA = "0123456789abcdef0123456789abcdef01234567"


def _run(
    data: str, values: dict[str, list[float]], costs: dict[str, tuple[float, float | None]]
) -> FrontierRun:
    rows = [
        (system, f"q{i}", metric, v)
        for system, vs in values.items()
        for metric in ("recall@5", "ndcg@10")
        for i, v in enumerate(vs)
    ]
    pq = pl.DataFrame(rows, schema=["system", "query_id", "metric", "value"], orient="row")
    frame = pl.DataFrame(
        [(s, t, c) for s, (t, c) in costs.items()],
        schema={
            "system": pl.String,
            "tokens_per_text_token": pl.Float64,
            "cpu_seconds": pl.Float64,
        },
        orient="row",
    )
    return FrontierRun(data=data, per_query=pq, costs=frame)


COSTS = {"d": (5.0, 40.0), "near": (1.0, 4.0), "far": (1.0, 2.0), "dear": (6.0, 50.0)}
A = _run(
    "A",
    {"d": [1, 1, 0, 0], "near": [1, 0.98, 0, 0], "far": [1, 1, 0, 0], "dear": [1, 1, 0, 0]},
    COSTS,
)
B = _run(
    "B",
    {"d": [1, 1, 1, 0], "near": [1, 1, 1, 0], "far": [0, 1, 1, 0], "dear": [1, 1, 1, 0]},
    COSTS,
)


def test_the_table_pairs_every_system_with_the_default() -> None:
    t = frontier_table([A, B], "d")
    assert t.height == 2 * 4 * 2  # data sets x systems x metrics
    row = t.filter(
        (pl.col("data") == "A") & (pl.col("system") == "near") & (pl.col("metric") == "recall@5")
    ).row(0, named=True)
    assert row["mean"] == pytest.approx(1.98 / 4)
    assert row["default_mean"] == 0.5
    assert row["delta"] == pytest.approx(-0.005)
    assert row["tokens_per_text_token"] == 1.0
    assert row["cpu_seconds"] == 4.0
    d = t.filter(pl.col("system") == "d")
    assert d["delta"].to_list() == [0.0] * 4
    assert d["p_holm"].to_list() == [1.0] * 4
    # far on B: one query of four lost, d = (-1, 0, 0, 0): every sign flip reaches |mean| 0.25,
    # so p = (10,000 + 1) / (10,000 + 1) = 1: one query is no evidence
    far = t.filter(
        (pl.col("data") == "B") & (pl.col("system") == "far") & (pl.col("metric") == "recall@5")
    ).row(0, named=True)
    assert far["delta"] == -0.25
    assert far["p"] == 1.0
    assert far["p_holm"] == 1.0


def test_the_cheapest_system_that_holds_on_every_data_set_is_chosen() -> None:
    choice = choose_default(frontier_table([A, B], "d"), "d")
    assert choice.system == "near"
    assert choice.changed
    verdicts = {v.system: v for v in choice.verdicts}
    assert verdicts["near"].holds
    assert verdicts["near"].cost_ratio == pytest.approx(0.1)  # 4/40 on both data sets
    assert not verdicts["far"].holds
    assert "B (-0.250)" in verdicts["far"].why
    assert not verdicts["dear"].holds
    assert "not cheaper" in verdicts["dear"].why


def test_the_default_stays_when_nothing_cheaper_holds() -> None:
    choice = choose_default(frontier_table([A, B], "d"), "d", tolerance=0.001)
    assert choice.system == "d"
    assert not choice.changed
    assert "stays" in choice.why
    assert (
        "recall@5 more than 0.001 below on A (-0.005)"
        in {v.system: v for v in choice.verdicts}["near"].why
    )


def test_a_system_missing_on_a_data_set_cannot_replace_the_default() -> None:
    b = B.per_query.filter(pl.col("system") != "near")
    choice = choose_default(
        frontier_table([A, FrontierRun(data="B", per_query=b, costs=B.costs)], "d"), "d"
    )
    assert {v.system: v for v in choice.verdicts}["near"].why == "not measured on B"
    assert choice.system == "d"


def test_without_cpu_seconds_the_cost_is_tokens_per_text_token() -> None:
    costs = {s: (t, None) for s, (t, _) in COSTS.items()}
    a = FrontierRun(data="A", per_query=A.per_query, costs=_run("A", {}, costs).costs)
    verdict = {v.system: v for v in choose_default(frontier_table([a], "d"), "d").verdicts}
    assert verdict["near"].cost_ratio == pytest.approx(0.2)  # 1 token per token against 5


def test_the_page_marks_the_choice_and_every_verdict() -> None:
    t = frontier_table([A, B], "d")
    page = frontier_markdown(t, choose_default(t, "d"), "d")
    assert "### A" in page
    assert "### B" in page
    assert "**near** replaces d" in page
    assert "| `far` | no |" in page
    assert "| `near` | 0.495 (-0.005, " in page


def test_a_run_without_the_default_is_refused() -> None:
    with pytest.raises(ValueError, match="no system 'x'"):
        frontier_table([A], "x")


def test_the_default_stays_while_a_required_data_set_is_not_measured() -> None:
    t = frontier_table([A, B], "d")
    choice = choose_default(t, "d", required=("A", "B", "C"))
    assert choice.system == "d"
    assert not choice.changed
    assert "these have no run yet: C;" in choice.why
    assert "(holding on the data sets measured: near)" in choice.why
    assert choose_default(t, "d", required=("A", "B")).system == "near"


def _folder(tmp: Path, r: FrontierRun, *, commit: str | None = SHA) -> Path:
    folder = tmp / r.data
    folder.mkdir()
    r.per_query.write_parquet(folder / "per_query.parquet")
    config: dict[str, object] = {"system_costs": r.costs.to_dicts()}
    if commit is not None:  # else no record of what made it
        config |= {"command": f"python -m eval.run --out {r.data}", "commit": commit}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_the_study_writes_the_page_and_the_standard_run_folder(tmp_path: Path) -> None:
    config = Frontier(runs=(("A", _folder(tmp_path, A)), ("B", _folder(tmp_path, B))), default="d")
    out, page = tmp_path / "study", tmp_path / "site" / "front.md"
    result = run(config, out, command=["python", "-m", "eval.frontier"], page=page)
    # near: cost 4/40 = 0.1x on both, recall@5 -0.005 on A (within 0.01), equal on B
    assert (result.metrics["chosen"], result.metrics["changed"]) == ("near", True)
    assert result.metrics["verdicts"]["near"]["cost_ratio"] == pytest.approx(0.1)
    assert not result.metrics["verdicts"]["far"]["holds"]
    text = page.read_text()
    assert "![recall@5 against embedding cost](front.png)" in text
    assert f"- **A**: `A`, made by `python -m eval.run --out A` at commit `{SHA}`" in text
    assert page.with_suffix(".png").read_bytes().startswith(b"\x89PNG")
    report = result.report.read_text()
    assert report == text.replace("(front.png)", "(frontier.png)")
    assert (out / "frontier.png").is_file()
    table = pl.read_parquet(out / "frontier.parquet")
    assert table.height == 2 * 4 * 2  # data sets x systems x metrics
    record = json.loads((out / "config.json").read_text())
    assert record["study"] == "frontier"
    assert record["config"]["runs"] == [["A", str(tmp_path / "A")], ["B", str(tmp_path / "B")]]
    assert [s["commit"] for s in record["data"]["sources"]] == [SHA, SHA]


def test_a_run_that_records_no_commit_is_refused(tmp_path: Path) -> None:
    config = Frontier(runs=(("A", _folder(tmp_path, A, commit=None)),), default="d")
    with pytest.raises(RunError, match="no record of the command and commit"):
        run(config, tmp_path / "out")
    assert not (tmp_path / "out").exists()
