"""The README's findings table: paired differences, intervals, Holm p, verdicts, markers."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from convlab.evaluation.findings import BEGIN, END, render, row, with_table
from convlab.evaluation.regressions import Headline


def _run(tmp_path: Path, system: list[float], base: list[float]) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    n = len(system)
    pl.DataFrame(
        {
            "system": ["s"] * n + ["b"] * n,
            "query_id": [f"q{i}" for i in range(n)] * 2,
            "category": ["c"] * 2 * n,
            "metric": ["recall@5"] * 2 * n,
            "value": system + base,
        }
    ).write_parquet(tmp_path / "per_query.parquet")
    return tmp_path


def test_a_row_is_the_paired_difference_its_interval_and_the_exact_p(tmp_path: Path) -> None:
    # d = [1, 0, 0, 1]: mean 0.5; a sign flip keeps |mean| >= 0.5 only when both nonzero
    # differences keep one sign: p = 1/2 (the permutation estimate, within its noise)
    run = _run(tmp_path, [1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0])
    r = row(run, Headline("s", "b", "recall@5"), data="tiny", page=None, permutations=20_000)
    assert (r.mean, r.baseline_mean, r.delta, r.queries) == (0.75, 0.25, 0.5, 4)
    assert r.p == pytest.approx(0.5, abs=0.02)
    assert 0.0 <= r.ci_low <= 0.5 <= r.ci_high <= 1.0


def test_the_table_holm_adjusts_over_its_rows_and_labels_a_regression(tmp_path: Path) -> None:
    h = Headline("s", "b", "recall@5")
    better = row(
        _run(tmp_path / "a", [1.0] * 12, [0.0] * 12), h, data="A", page="a.md", permutations=10_000
    )
    worse = row(
        _run(tmp_path / "b", [0.0] * 12, [1.0] * 12), h, data="B", page=None, permutations=10_000
    )
    same = row(
        _run(tmp_path / "c", [1.0, 0.0] * 6, [0.0, 1.0] * 6),
        h,
        data="C",
        page=None,
        permutations=10_000,
    )
    # 12 equal differences: only the all-same-sign flips reach |mean| = 1: p = (1 + k)/10001
    # with k ~ 10000 * 2/4096 ~ 5; Holm multiplies the smallest of three by 3
    text = render(
        [better, worse, same],
        permutations=10_000,
        command="cmd",
        commit="abc",
        seconds=600.0,
        full=(1500.0, ["big"]),
    )
    lines = [
        line
        for line in text.splitlines()
        if line.startswith("| [A]") or line.startswith("| B") or line.startswith("| C")
    ]
    assert "better" in lines[0]
    assert "regression" in lines[1]
    assert "no difference" in lines[2]
    assert "+1.000 [+1.000, +1.000]" in lines[0]
    assert "-1.000" in lines[1]
    assert "no p can be below 0.00030" in text
    assert "`cmd` from runs made at commit `abc`; the tier's runs took 10 minutes" in text
    assert "measured so far took 25 minutes; not yet measured: big." in text
    assert text.startswith(BEGIN)
    assert text.endswith(END)


def test_with_table_replaces_only_between_the_markers() -> None:
    readme = f"intro\n{BEGIN}\nold\n{END}\noutro\n"
    assert with_table(readme, f"{BEGIN}\nnew\n{END}") == f"intro\n{BEGIN}\nnew\n{END}\noutro\n"
    with pytest.raises(ValueError, match="markers"):
        with_table("no markers", "x")


def test_the_table_of_a_tier_names_its_runs_commit_and_recorded_times(tmp_path: Path) -> None:
    import json

    from convlab.evaluation.findings import table
    from convlab.evaluation.regressions import Regression

    run = _run(tmp_path / "r", [1.0, 1.0, 0.0, 0.0], [0.0] * 4)
    (run / "config.json").write_text(json.dumps({"commit": "f" * 40}))
    h = Headline("s", "b", "recall@5")
    mine = Regression("tiny", "Tiny", "quick", [["x"]], "d", "a" * 64, headline=h, seconds=120.0)
    big = Regression("big", "Big", "full", [["x"]], "d", "a" * 64, seconds=None)
    small = Regression("small", "Small", "ci", [["x"]], "d", "a" * 64, seconds=60.0)
    text = table([(mine, run)], [mine, big, small], "quick", command="cmd", permutations=1000)
    # s finds q0, q1; b none: 0.5 against 0.0, the differences 1, 1, 0, 0: +0.500
    assert "| Tiny (4 queries) | recall@5 | `s` 0.500 | `b` 0.000 | +0.500 [" in text
    assert "from runs made at commit `" + "f" * 40 + "`" in text  # the runs' commit
    assert "the tier's runs took 3 minutes" in text  # quick: tiny 120 s + small (ci) 60 s
    assert "measured so far took 3 minutes; not yet measured: big." in text
