"""The lever table: paired deltas worked by hand, Holm over the table, refusals naming the row."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from convlab.studies.levers import Lever, Levers, lever_table, read_levers, read_per_query, run

METRIC = "recall@5"


def _pq(system: str, values: dict[str, float], category: str = "c") -> pl.DataFrame:
    return pl.DataFrame(
        {
            "system": [system] * len(values),
            "query_id": list(values),
            "category": [category if q != "q4" else "other" for q in values],
            "metric": [METRIC] * len(values),
            "value": list(values.values()),
        }
    )


def test_delta_is_paired_over_the_queries_both_scored() -> None:
    # base scores q1..q4, the lever q2..q5: paired on q2, q3, q4 only
    pq = pl.concat([
        _pq("base", {"q1": 1.0, "q2": 0.0, "q3": 0.5, "q4": 1.0}),
        _pq("lev", {"q2": 1.0, "q3": 1.0, "q4": 0.0, "q5": 1.0}),
    ])  # fmt: skip
    row = Lever(lever="L", data="d", run="r", system="lev", baseline="base", categories=["c"])
    t = lever_table([row], {"r": pq}).row(0, named=True)
    # base on q2..q4: (0 + 0.5 + 1) / 3 = 0.5; lever (1 + 1 + 0) / 3 = 2/3
    assert t["queries"] == 3
    assert t["baseline_mean"] == pytest.approx(0.5)
    assert t["lever_mean"] == pytest.approx(2 / 3)
    assert t["delta"] == pytest.approx(1 / 6)
    # category c holds q2, q3: deltas +1 and +0.5, mean +0.75 (q4 is in "other")
    assert t["by_category"] == "c +0.750"


def test_holm_runs_over_every_row_of_the_table() -> None:
    # 30 queries each: lever A always +1 (p tiny), lever B no change (p 1)
    q = {f"q{i}": 0.0 for i in range(30)}
    pq = pl.concat([_pq("base", q), _pq("a", dict.fromkeys(q, 1.0)), _pq("b", q)])
    rows = [
        Lever(lever="A", data="d", run="r", system="a", baseline="base"),
        Lever(lever="B", data="d", run="r", system="b", baseline="base"),
    ]
    t = lever_table(rows, {"r": pq})
    p = t["p"].to_list()
    # Holm with m = 2: the smaller p doubled, the larger kept (already 1)
    assert t["p_holm"].to_list() == pytest.approx([min(1.0, 2 * p[0]), 1.0])
    assert p[0] < 0.001


def test_a_missing_system_is_refused_by_name() -> None:
    pq = _pq("base", {"q1": 1.0})
    row = Lever(lever="L", data="d", run="r", system="gone", baseline="base")
    with pytest.raises(ValueError, match="run 'r' has no recall@5 for system 'gone'"):
        lever_table([row], {"r": pq})


def test_rows_are_read_and_bad_rows_named(tmp_path: Path) -> None:
    good = tmp_path / "levers.toml"
    good.write_text(
        '[[levers]]\nlever = "L"\ndata = "d"\nrun = "r"\nsystem = "a"\nbaseline = "b"\n'
        'categories = ["multi-hop"]\n'
    )
    (lever,) = read_levers(good)
    assert (lever.system, lever.categories, lever.metric) == ("a", ("multi-hop",), "recall@5")
    same = tmp_path / "same.toml"
    same.write_text(
        '[[levers]]\nlever = "L"\ndata = "d"\nrun = "r"\nsystem = "a"\nbaseline = "a"\n'
    )
    with pytest.raises(ValueError, match=r"same.toml: lever 1: .*both 'a'"):
        read_levers(same)
    with pytest.raises(FileNotFoundError, match="no per-query values"):
        read_per_query(tmp_path, ["r"])


def test_settings_are_chosen_per_fold_on_training_queries_only() -> None:
    # two conversations; setting s1 is perfect on c1 only, s2 on c2 only: each fold, trained on
    # the other conversation, picks the setting that fails its own: held-out mean 0
    ids = ["c1:q0", "c1:q1", "c2:q0", "c2:q1"]
    pq = pl.concat([
        _pq("base", dict(zip(ids, [0.5] * 4, strict=True))),
        _pq("s1", dict(zip(ids, [1.0, 1.0, 0.0, 0.0], strict=True))),
        _pq("s2", dict(zip(ids, [0.0, 0.0, 1.0, 1.0], strict=True))),
    ])  # fmt: skip
    row = Lever(lever="L", data="d", run="r", system="cv", baseline="base", settings=["s*"],
                folds=2)  # fmt: skip
    t = lever_table([row], {"r": pq}).row(0, named=True)
    assert (t["lever_mean"], t["baseline_mean"], t["delta"]) == (0.0, 0.5, -0.5)
    with pytest.raises(ValueError, match=r"settings \['x\*'\] match \[\]"):
        lever_table([Lever(lever="L", data="d", run="r", system="cv", baseline="base",
                           settings=["x*"])], {"r": pq})  # fmt: skip


def test_the_study_writes_the_page_and_the_standard_run_folder(tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "r"
    folder.mkdir(parents=True)
    pl.concat([
        _pq("base", {"q1": 0.0, "q2": 1.0}),
        _pq("lev", {"q1": 1.0, "q2": 1.0}),
    ]).write_parquet(folder / "per_query.parquet")  # fmt: skip
    (folder / "config.json").write_text(
        json.dumps({"command": "python -m eval.run", "commit": "a" * 40, "commit_state": "clean"})
    )
    table = tmp_path / "levers.toml"
    table.write_text('[[levers]]\nlever = "L"\ndata = "d"\nrun = "r"\nsystem = "lev"\n'
                     'baseline = "base"\n')  # fmt: skip
    page, out = tmp_path / "docs" / "levers.md", tmp_path / "study"
    command = ["python", "-m", "eval.levers", str(table)]
    result = run(Levers(table=table, runs=tmp_path / "runs"), out, command=command, page=page)
    # base (0 + 1) / 2 = 0.5, the lever (1 + 1) / 2 = 1.0: delta +0.5 on 2 queries
    (row,) = result.metrics["levers"]
    assert (row["baseline_mean"], row["lever_mean"], row["delta"], row["queries"]) == (
        0.5,
        1.0,
        0.5,
        2,
    )
    text = page.read_text()
    assert "| L | d | `lev` vs `base` | recall@5 | 2 | 0.500 | 1.000 | +0.500 |" in text
    assert f"Generated by `python -m eval.levers {table}`" in text
    assert "- `r`: `python -m eval.run` (commit aaaaaaaaaa, clean)" in text
    assert json.loads(page.with_suffix(".json").read_text()) == [row]
    assert (out / "report.md").read_text() == text
    assert pl.read_parquet(out / "levers.parquet")["delta"].to_list() == [0.5]
    record = json.loads((out / "config.json").read_text())
    assert record["study"] == "levers"
    assert record["data"]["sources"][0]["commit"] == "a" * 40
