"""The search confidence: its features worked out by hand, the model, the verdict."""

from __future__ import annotations

import math
from pathlib import Path

import msgspec
import numpy as np
import polars as pl
import pytest

from convlab.systems import default_system
from convlab.systems.confidence import (
    FEATURES,
    ConfidenceModel,
    confidence,
    features_frame,
    hit_features,
    load_model,
    query_terms,
    verdict,
)


def _model(**changes: object) -> ConfidenceModel:
    fields: dict[str, object] = {
        "system": "fusion:convex",
        "features": FEATURES,
        "mean": (0.0,) * 6,
        "scale": (1.0,) * 6,
        "coef": (0.0, 0.0, 0.0, 2.0, 0.0, 0.0),  # matched_top alone
        "intercept": -1.0,
        "threshold": 0.5,
    }
    return ConfidenceModel(**{**fields, **changes})  # type: ignore[arg-type]


def _hits(scores: list[float], texts: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"rank": list(range(1, len(scores) + 1)), "score": scores, "text": texts})


def test_query_terms_drop_stopwords_short_words_and_repeats() -> None:
    assert query_terms("How did we fix the flaky Fixture, a fixture?") == (
        "did",
        "fix",
        "flaky",
        "fixture",
    )


def test_features_by_hand() -> None:
    # scores 4, 2, 0: gap 2; mean 2, population sd sqrt(8/3): spread 2 / 1.633
    f = hit_features(
        "kafka topic payments",
        [4.0, 2.0, 0.0],
        ["the Kafka topics", "payment events", "nothing"],
    )
    assert f["top"] == 4.0
    assert f["gap"] == 2.0
    assert f["spread"] == pytest.approx(2.0 / math.sqrt(8.0 / 3.0))
    # "topics" starts with "topic" (its first six letters); "payments" -> "paymen" in hit 2
    assert f["matched_top"] == pytest.approx(2 / 3)
    assert f["matched_any"] == 1.0
    assert f["terms"] == pytest.approx(math.log(4))


def test_features_of_no_hit_and_of_a_query_of_stopwords() -> None:
    f = hit_features("what is it", [], [])
    assert f == dict.fromkeys(FEATURES, 0.0)
    one = hit_features("kafka", [1.5], ["kafka"])
    assert (one["gap"], one["spread"], one["matched_top"]) == (0.0, 0.0, 1.0)


def test_features_frame_reads_the_first_ten_ranks_of_each_query() -> None:
    hits = pl.DataFrame(
        {
            "query_id": ["a"] * 12 + ["b"],
            "rank": [*range(12, 0, -1), 1],
            "score": [float(r) for r in range(12, 0, -1)] + [1.0],
            "text": ["x"] * 12 + ["kafka"],
        }
    )
    frame = features_frame(hits, {"a": "kafka", "b": "kafka", "c": "kafka"})
    assert frame["query_id"].to_list() == ["a", "b", "c"]
    a = frame.row(0, named=True)
    # ranks 1..10 of a: scores 1..10 (rank r scored r, the list given in reverse)
    assert a["top"] == 1.0
    assert a["gap"] == 1.0 - 2.0
    assert frame.row(1, named=True)["matched_top"] == 1.0
    assert frame.row(2, named=True)["top"] == 0.0  # no hits: the features of none


def test_the_model_is_a_logistic_regression_on_standardised_features() -> None:
    model = _model(mean=(0.0, 0.0, 0.0, 0.5, 0.0, 0.0), scale=(1.0, 1.0, 1.0, 0.25, 1.0, 1.0))
    x = np.array([[0, 0, 0, 1.0, 0, 0], [0, 0, 0, 0.5, 0, 0]])
    # (1 - 0.5) / 0.25 = 2 -> logit 2 * 2 - 1 = 3; (0.5 - 0.5) -> logit -1
    assert model.predict(x) == pytest.approx([1 / (1 + math.exp(-3)), 1 / (1 + math.exp(1))])


def test_confidence_and_verdict_of_the_system_the_model_was_fitted_for() -> None:
    model = _model()
    hits = _hits([2.0, 1.0], ["the kafka topic", "other"])
    sure = confidence("kafka topic", hits, "fusion:convex", model)
    assert sure == pytest.approx(1 / (1 + math.exp(-1.0)))  # 2 * 1.0 - 1
    v = verdict("kafka topic", hits, "fusion:convex", model=model)
    assert v.threshold == 0.5
    assert v.confident
    missing = verdict("nothing here", hits, "fusion:convex", model=model)
    assert missing.confidence == pytest.approx(1 / (1 + math.exp(1.0)))
    assert not missing.confident
    assert verdict("nothing here", hits, "fusion:convex", 0.0, model).confident  # 0 keeps all


def test_another_systems_hits_have_no_confidence_and_a_threshold_for_them_is_refused() -> None:
    model = _model()
    hits = _hits([2.0], ["kafka"])
    assert confidence("kafka", hits, "bm25:message", model) is None
    v = verdict("kafka", hits, "bm25:message", model=model)
    assert (v.confidence, v.threshold, v.confident) == (None, None, True)
    with pytest.raises(ValueError, match="fitted for the system 'fusion:convex'"):
        verdict("kafka", hits, "bm25:message", 0.3, model)
    with pytest.raises(ValueError, match=r"within 0\.\.1"):
        verdict("kafka", hits, "fusion:convex", 1.5, model)


def test_a_model_file_with_an_unknown_field_or_mismatched_lengths_is_refused(
    tmp_path: Path,
) -> None:
    good = msgspec.json.encode(_model())
    path = tmp_path / "m.json"
    path.write_bytes(good.replace(b'"threshold"', b'"extra":1,"threshold"'))
    with pytest.raises(msgspec.ValidationError, match="extra"):
        load_model(path)
    with pytest.raises(ValueError, match="6 means"):
        _model(coef=(1.0,))


def test_the_shipped_model_is_for_the_default_system_and_records_its_command() -> None:
    model = load_model()
    assert model.system == default_system().name
    assert model.features == FEATURES
    assert model.command.startswith("python -m eval.confidence")
    assert 0.0 < model.threshold < 1.0
