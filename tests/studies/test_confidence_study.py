"""The confidence study on a hand-made features frame: folds, held-out fits, thresholds, rates.

Two data sets of one group each, so the grouped CV has two folds and each fold fits on the
other data set. Only ``top`` varies (the other features are constant: standardised to 0, they
weigh nothing), answerable queries have the higher ``top`` in every training set, so each
model's confidence rises with ``top`` and every threshold, rate and AUROC follows from the order
of ``top`` alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from convlab.studies.confidence_study import (
    ConfidenceConfig,
    ConfidenceStudy,
    cross_validated,
    no_answer,
    run,
    summarise,
    threshold_for,
    transfer,
)
from convlab.systems.confidence import FEATURES

# group x/a: 4 queries (3 answerable, top 0.9 0.8 0.7; 1 no-answer, top 0.2)
# group y/b: 3 queries (2 answerable, top 0.85 0.75; 1 no-answer, top 0.1)
TOP = [0.9, 0.8, 0.7, 0.2, 0.85, 0.75, 0.1]
NA = [False, False, False, True, False, False, True]
KEEP = 0.75


def _frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "dataset": ["x"] * 4 + ["y"] * 3,
            "query_id": [f"x:q{i}" for i in range(4)] + [f"y:q{i}" for i in range(3)],
            "group": ["x/a"] * 4 + ["y/b"] * 3,
            "no_answer": NA,
            "answered": [not n for n in NA],
            **{f: TOP if f == "top" else [1.0] * 7 for f in FEATURES},
        }
    )


def _sklearn(train: pl.DataFrame) -> object:
    x = train.select(FEATURES).to_numpy()
    return make_pipeline(StandardScaler(), LogisticRegression(C=1.0)).fit(
        x, (~train["no_answer"]).to_numpy().astype(int)
    )


def _proba(model: object, rows: pl.DataFrame) -> np.ndarray:
    return model.predict_proba(rows.select(FEATURES).to_numpy())[:, 1]  # type: ignore[attr-defined]


def test_no_answer_reads_abstentions_and_the_no_answer_categories() -> None:
    queries = pl.DataFrame(
        {
            "query_id": ["q1_abs", "q2", "q3", "q4"],
            "category": ["single-hop", "adversarial", "no-answer", None],
        }
    )
    assert no_answer(queries).to_list() == [True, True, True, False]


def test_the_threshold_keeps_the_share_asked() -> None:
    conf = np.array([0.1, 0.5, 0.6, 0.9, 0.2])
    answerable = np.array([True, True, True, True, False])
    # 4 answerable, sorted 0.1 0.5 0.6 0.9: keep 0.75 drops floor(0.25 * 4) = 1: threshold 0.5
    assert threshold_for(conf, answerable, 0.75) == 0.5
    # keep 0.5 drops floor(0.5 * 4) = 2: threshold 0.6 (0.6 and 0.9 kept, half)
    assert threshold_for(conf, answerable, 0.5) == 0.6
    with pytest.raises(ValueError, match="no answerable"):
        threshold_for(conf, np.zeros(5, dtype=bool), 0.5)


def test_grouped_cv_fits_each_fold_on_the_other_group() -> None:
    frame = _frame()
    judged = cross_validated(frame, ConfidenceConfig(folds=5, keep=KEEP))
    # 2 groups: 2 folds (not 5); GroupKFold deals the larger group first: x/a (4) to fold 0
    assert judged["fold"].to_list() == [0, 0, 0, 0, 1, 1, 1]
    x, y = frame[:4], frame[4:]
    # fold 0 (x held out) is fitted on y alone, fold 1 on x alone: the same numbers as
    # scikit-learn's pipeline fitted on those rows
    on_y, on_x = _sklearn(y), _sklearn(x)
    assert judged["confidence"].to_list()[:4] == pytest.approx(_proba(on_y, x).tolist())
    assert judged["confidence"].to_list()[4:] == pytest.approx(_proba(on_x, y).tolist())
    # fold 0's threshold: y's 2 answerable kept at 0.75: drop floor(0.25 * 2) = 0, the lower
    # one (top 0.75); fold 1's: x's 3 answerable, drop floor(0.25 * 3) = 0, top 0.7
    cut0, cut1 = _proba(on_y, y[1:2])[0], _proba(on_x, x[2:3])[0]
    assert judged["threshold"].to_list() == pytest.approx([cut0] * 4 + [cut1] * 3)
    # the confidence rises with top: x's 0.7 is below y's cut (0.75), the rest of x's
    # answerable above it; y's answerable (0.85, 0.75) at or above x's cut (0.7)
    conf = judged["confidence"].to_list()
    assert conf[0] > conf[1] > cut0 > conf[2] > conf[3]
    assert conf[4] > conf[5] >= cut1 > conf[6]


def test_the_summary_rates_worked_out_by_hand() -> None:
    judged = cross_validated(_frame(), ConfidenceConfig(folds=2, keep=KEEP))
    held = {r["dataset"]: r for r in summarise(judged).to_dicts()}
    # x: 4 queries, 1 no-answer; kept 2 of 3 answerable (0.9, 0.8; not 0.7), its no-answer
    # (0.2) below the cut: flagged 1/1; every answerable above the no-answer: AUROC 1
    assert held["x"] == {"dataset": "x", "queries": 4, "no_answer": 1, "auroc": 1.0,
                         "kept": pytest.approx(2 / 3), "flagged": 1.0}  # fmt: skip
    # y: 3 queries, 1 no-answer; both answerable kept, the no-answer (0.1) flagged
    assert held["y"] == {"dataset": "y", "queries": 3, "no_answer": 1, "auroc": 1.0,
                         "kept": 1.0, "flagged": 1.0}  # fmt: skip
    # transfer: fitted on all of one data set, judged on the other: here the same fits as CV
    moved = {(r["fitted_on"], r["dataset"]): r for r in transfer(_frame(), ConfidenceConfig(
        keep=KEEP)).to_dicts()}  # fmt: skip
    assert set(moved) == {("x", "y"), ("y", "x")}
    assert moved[("y", "x")]["kept"] == pytest.approx(2 / 3)
    assert moved[("x", "y")]["kept"] == 1.0


def test_the_run_folder_records_its_groups_and_figures(tmp_path: Path) -> None:
    features = tmp_path / "in" / "features.parquet"
    features.parent.mkdir()
    _frame().write_parquet(features)
    features.with_suffix(".command").write_text("python -m eval.confidence --out in\n")
    config = ConfidenceStudy(
        fit=ConfidenceConfig(folds=2, keep=KEEP), features=features, model=tmp_path / "m.json"
    )
    out = tmp_path / "out"
    result = run(config, out, command=["python", "-m", "eval.confidence", "--out", "out"])
    record = json.loads((out / "config.json").read_text())
    assert record["study"] == "confidence"
    assert record["config"]["fit"] == {"folds": 2, "keep": 0.75, "c": 1.0}
    # 7 queries in 2 groups, 2 folds, under the conversation rule
    assert record["groups"] == {"rule": "conversation", "groups": 2, "folds": 2, "queries": 7}
    groups = pl.read_parquet(out / "groups.parquet")
    assert groups.rows() == [(f"x:q{i}", "x/a", 0) for i in range(4)] + [
        (f"y:q{i}", "y/b", 1) for i in range(3)
    ]
    assert record["data"]["datasets"] == ["x", "y"]
    held = {r["dataset"]: r for r in result.metrics["held_out"]}
    assert held["x"]["kept"] == pytest.approx(2 / 3)
    model = json.loads((tmp_path / "m.json").read_text())
    assert model["command"] == (
        "python -m eval.confidence --out in (searches); python -m eval.confidence --out out (fit)"
    )
    assert (out / "features.command").read_text() == "python -m eval.confidence --out in\n"
    assert result.report.read_text() == (out / "confidence.md").read_text()
    assert pl.read_parquet(out / "held_out.parquet")["fold"].to_list() == [0] * 4 + [1] * 3


def test_a_reused_features_file_needs_its_command(tmp_path: Path) -> None:
    features = tmp_path / "features.parquet"
    _frame().write_parquet(features)
    config = ConfidenceStudy(features=features, model=tmp_path / "m.json")
    with pytest.raises(ValueError, match=r"features\.command is missing"):
        run(config, tmp_path / "out")
