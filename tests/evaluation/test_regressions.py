"""The regression registry: files, tiers, figures read from run folders, recorded figures."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from convlab.evaluation.regressions import (
    Figure,
    Headline,
    RegressionError,
    check,
    data_sha256,
    figure_value,
    in_tier,
    load_regressions,
    paired_values,
    recorded_figures,
    with_figures,
)

ROOT = Path(__file__).resolve().parents[2]
SHA = "a" * 64
FILE = f"""name = "tiny"
title = "Tiny"
tier = "quick"
data = "data/sample"
data_sha256 = "{SHA}"
steps = [["eval.run", "--out", "{{run}}"]]
headline = {{ system = "x", baseline = "bm25:message", metric = "recall@5" }}
"""


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    summary = [
        {"system": "x", "metric": "recall@5", "mean": 0.75, "queries": 4},
        {"system": "x", "metric": "mrr", "mean": 0.5, "queries": 4},
        {"system": "bm25:message", "metric": "recall@5", "mean": 0.25, "queries": 4},
    ]
    official = [
        {
            "system": "x",
            "level": "turn",
            "metric": "recall_all@5",
            "average": "strict",
            "mean": 0.6,
            "queries": 3,
        },
        {
            "system": "x",
            "level": "turn",
            "metric": "recall_all@5",
            "average": "non_abstention",
            "mean": 0.55,
            "queries": 4,
        },
        {
            "system": "x",
            "level": "turn",
            "metric": "recall_any@1",
            "average": "strict",
            "mean": 0.1,
            "queries": 3,
        },
    ]
    (run / "metrics.json").write_text(
        json.dumps({"summary": summary, "official": {"summary": official}})
    )
    (run / "config.json").write_text(json.dumps({"config": {"headline": ["recall@5"]}}))
    pl.DataFrame(
        {
            "system": ["x"] * 4 + ["bm25:message"] * 4,
            "query_id": ["q1", "q2", "q3", "q4"] * 2,
            "category": ["c"] * 8,
            "metric": ["recall@5"] * 8,
            "value": [1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0],
        }
    ).write_parquet(run / "per_query.parquet")
    return run


def test_every_committed_regression_loads_and_names_its_own_file() -> None:
    regs = load_regressions(ROOT / "eval" / "regressions")
    assert {r.name for r in regs} >= {"sample", "locomo2", "locomo", "real_sessions"}
    for r in regs:
        assert Path(r.source).stem == r.name
        # the runs behind the README and CI are recorded (python -m eval.reproduce --record)
        assert r.tier == "full" or r.figures, r.name


def test_a_tier_runs_its_own_and_every_smaller_tiers_regressions(tmp_path: Path) -> None:
    (tmp_path / "tiny.toml").write_text(FILE)
    (reg,) = load_regressions(tmp_path)
    assert (in_tier(reg, "ci"), in_tier(reg, "quick"), in_tier(reg, "full")) == (False, True, True)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda t: t.replace('tier = "quick"', 'tier = "nightly"'), "tier"),
        (lambda t: t.replace('name = "tiny"', 'name = "other"'), "not the file's name"),
        (lambda t: t.replace(SHA, "abc"), "data_sha256"),
        (lambda t: t + "surprise = 1\n", "surprise"),
        (lambda t: t.replace('steps = [["eval.run", "--out", "{run}"]]', "steps = [[]]"), "steps"),
    ],
)
def test_a_bad_file_is_one_line_naming_it(tmp_path: Path, edit, says: str) -> None:
    (tmp_path / "tiny.toml").write_text(edit(FILE))
    with pytest.raises(RegressionError) as e:
        load_regressions(tmp_path)
    assert str(tmp_path / "tiny.toml") in str(e.value)
    assert says in str(e.value)
    assert "\n" not in str(e.value)


def test_data_sha256_of_a_folder_changes_with_a_byte_or_a_name(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.txt").write_text("one")
    first = data_sha256(d)
    (d / "a.txt").write_text("onE")
    second = data_sha256(d)
    (d / "a.txt").rename(d / "b.txt")
    assert len({first, second, data_sha256(d)}) == 3
    f = tmp_path / "f"
    f.write_bytes(b"abc")  # sha256("abc"), the FIPS 180-2 example
    assert data_sha256(f) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_figures_are_read_from_summary_or_official_and_checked_within_tolerance(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path)
    assert figure_value(run, Figure("x", "recall@5", 0.0)) == 0.75
    official = Figure("x", "recall_all@5", 0.0, level="turn", average="non_abstention")
    assert figure_value(run, official) == 0.55
    assert figure_value(run, Figure("y", "recall@5", 0.0)) is None
    (tmp_path / "tiny.toml").write_text(
        FILE + 'figures = [{ system = "x", metric = "recall@5", expected = 0.749, '
        'tolerance = 0.001 }, { system = "x", metric = "mrr", expected = 0.52, '
        "tolerance = 0.01 }]\n"
    )
    (reg,) = load_regressions(tmp_path)
    got = check(run, reg)
    # |0.75 - 0.749| = 0.001 <= 0.001; |0.5 - 0.52| = 0.02 > 0.01
    assert [(c.metric, c.value, c.ok) for c in got] == [
        ("recall@5", 0.75, True),
        ("mrr", 0.5, False),
    ]


def test_recorded_figures_are_the_headline_metrics_and_rewrite_only_their_own_part(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path)
    figures = recorded_figures(run, tolerance=0.002)
    # recall@5 of both systems (mrr is not a headline metric); the official recall_all@5 rows
    assert [(f.system, f.metric, f.expected, f.level) for f in figures] == [
        ("x", "recall@5", 0.75, None),
        ("bm25:message", "recall@5", 0.25, None),
        ("x", "recall_all@5", 0.6, "turn"),
        ("x", "recall_all@5", 0.55, "turn"),
    ]
    (tmp_path / "tiny.toml").write_text(with_figures(FILE, figures[:1]))
    twice = with_figures((tmp_path / "tiny.toml").read_text(), figures)
    (tmp_path / "tiny.toml").write_text(twice)
    (reg,) = load_regressions(tmp_path)
    assert reg.figures == figures
    assert twice.startswith(FILE.rstrip("\n"))
    assert all(c.ok for c in check(run, reg))


def test_paired_values_pair_the_system_with_its_baseline_by_query(tmp_path: Path) -> None:
    a, b = paired_values(_run(tmp_path), Headline("x", "bm25:message", "recall@5"))
    assert a.tolist() == [1.0, 1.0, 0.0, 1.0]
    assert b.tolist() == [0.0, 1.0, 0.0, 0.0]
    with pytest.raises(RegressionError, match="no queries"):
        paired_values(tmp_path / "run", Headline("x", "nobody", "recall@5"))
