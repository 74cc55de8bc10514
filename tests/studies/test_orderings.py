"""``python -m eval.orderings``: pairs, Holm and verdicts worked by hand on made-up runs."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from convlab.studies.orderings import (
    Orderings,
    PairResult,
    pair_results,
    run,
    verdict,
    write_orderings,
)


def _run(values: dict[str, list[float]], metric: str = "recall@5") -> pl.DataFrame:
    rows = [(system, f"q{i}", metric, v) for system, vs in values.items() for i, v in enumerate(vs)]
    return pl.DataFrame(rows, schema=["system", "query_id", "metric", "value"], orient="row")


# 20 queries: on run "a", x beats y on every query (p at the test's floor), z equals y;
# on run "b", y beats x on every query: the ordering x > y flips.
A = _run({"x": [1.0] * 20, "y": [0.0] * 20, "z": [0.0] * 20})
B = _run({"x": [0.0] * 20, "y": [1.0] * 20, "z": [0.0] * 20})


def test_pairs_are_ordered_by_the_first_run_and_signed_on_each() -> None:
    results = pair_results({"a": A, "b": B}, "recall@5")
    first = {(r.a, r.b): r for r in results if r.run == "a"}
    later = {(r.a, r.b): r for r in results if r.run == "b"}
    # means on a: x 1, y 0, z 0 -> pairs (x, y), (x, z), (y, z) (y >= z keeps y first)
    assert set(first) == {("x", "y"), ("x", "z"), ("y", "z")}
    assert first[("x", "y")].delta == 1.0
    assert later[("x", "y")].delta == -1.0
    assert first[("y", "z")].delta == 0.0
    assert first[("y", "z")].p == 1.0
    assert later[("x", "z")].delta == 0.0
    assert all(r.queries == 20 for r in results)
    assert verdict(first[("x", "y")], later[("x", "y")]) == "flips"
    assert verdict(first[("y", "z")], later[("y", "z")]) == "n.s. first"
    # x > z on a, no difference on b
    assert verdict(first[("x", "z")], later[("x", "z")]) == "opposite sign, n.s."


def test_a_subset_of_systems_makes_fewer_pairs() -> None:
    results = pair_results({"a": A, "b": B}, "recall@5", systems=["x", "y"])
    assert {(r.a, r.b) for r in results} == {("x", "y")}
    with pytest.raises(ValueError, match="not in every run: w"):
        pair_results({"a": A, "b": B}, "recall@5", systems=["x", "w"])


def test_verdicts_by_hand() -> None:
    def r(delta: float, p: float) -> PairResult:
        return PairResult("r", "s", "t", delta, p, p, 10)

    assert verdict(r(0.1, 0.001), r(0.05, 0.01)) == "holds"
    assert verdict(r(0.1, 0.001), r(-0.05, 0.01)) == "flips"
    assert verdict(r(0.1, 0.001), r(0.05, 0.2)) == "same sign, n.s."
    assert verdict(r(0.1, 0.2), r(0.05, 0.001)) == "n.s. first"


def test_needs_shared_systems_and_the_metric() -> None:
    with pytest.raises(ValueError, match="share 1 system"):
        pair_results({"a": A, "b": _run({"x": [1.0], "w": [0.0]})}, "recall@5")
    with pytest.raises(ValueError, match="no 'ndcg@10'"):
        pair_results({"a": A, "b": B}, "ndcg@10")


def test_the_table_and_json_are_written(tmp_path: Path) -> None:
    results = pair_results({"a": A, "b": B}, "recall@5")
    out = tmp_path / "out"
    runs = {"a": tmp_path / "a", "b": tmp_path / "b"}
    assert write_orderings(out, results, runs, "recall@5") == out / "orderings.md"
    record = json.loads((out / "orderings.json").read_text())
    assert record["verdicts"]["x > y"] == {"b": "flips"}
    assert record["runs"] == {"a": str(tmp_path / "a"), "b": str(tmp_path / "b")}
    assert "| `x` > `y` | +1.000 |" in (out / "orderings.md").read_text()


def test_the_study_writes_the_standard_run_folder(tmp_path: Path) -> None:
    for name, frame in (("a", A), ("b", B)):
        (tmp_path / name).mkdir()
        frame.write_parquet(tmp_path / name / "per_query.parquet")
    config = Orderings(runs=(("a", tmp_path / "a"), ("b", tmp_path / "b")), systems=("x", "y"))
    result = run(config, tmp_path / "out", command=["python", "-m", "eval.orderings"])
    out = tmp_path / "out"
    # x beats y by 1 on every query of a, loses by 1 on every query of b: the ordering flips
    assert result.metrics["verdicts"] == {"x > y": {"b": "flips"}}
    assert json.loads((out / "metrics.json").read_text())["systems"] == ["x", "y"]
    pairs = pl.read_parquet(out / "pairs.parquet")
    assert pairs.select("run", "a", "b", "delta", "queries").rows() == [
        ("a", "x", "y", 1.0, 20),
        ("b", "x", "y", -1.0, 20),
    ]
    record = json.loads((out / "config.json").read_text())
    assert record["study"] == "orderings"
    assert record["config"]["runs"] == [["a", str(tmp_path / "a")], ["b", str(tmp_path / "b")]]
    assert record["command"] == "python -m eval.orderings"
    assert result.report.read_text() == (out / "orderings.md").read_text()
    with pytest.raises(ValueError, match="no such file"):
        run(Orderings(runs=(("a", tmp_path / "a"), ("c", tmp_path / "c"))), out)
    with pytest.raises(ValueError, match="at least two"):
        Orderings(runs=(("a", tmp_path / "a"),))
