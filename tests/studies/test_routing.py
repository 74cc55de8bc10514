"""Routing: per-type choices by grouped CV, the fallback, the classifier, no test-fold reads."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from sklearn.model_selection import GroupKFold

from convlab.studies.routing import (
    Routing,
    TypeClassifier,
    learn_routes,
    predicted_types,
    route_cv,
    routed_run,
    weight_space,
)
from convlab.systems.system import Tuning

# two settings, four queries; groups a, b; types x, x, y, y. Setting 0 is right for type x,
# setting 1 for type y; over all queries they tie (0.5 each), so the all-type choice is 0.
VALUES = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
GROUPS = ["a", "b", "a", "b"]
TYPES = ["x", "x", "y", "y"]
TWO_FOLDS = Tuning(folds=2)


def test_each_type_takes_the_setting_best_on_its_training_queries() -> None:
    # fold holding a (queries 0, 2) trains on 1 (x: setting 0) and 3 (y: setting 1), and so on
    r = route_cv(VALUES, GROUPS, TYPES, Routing(tuning=TWO_FOLDS, min_train=1))
    assert r.settings.tolist() == [0, 0, 1, 1]
    assert r.values.tolist() == [1.0, 1.0, 1.0, 1.0]
    per_type = r.choices.filter(pl.col("type") != "*")
    assert sorted(per_type.select("type", "setting").unique().rows()) == [("x", 0), ("y", 1)]
    assert per_type["train_queries"].to_list() == [1, 1, 1, 1]
    assert not any(per_type["fallback"].to_list())


def test_a_type_below_the_threshold_takes_the_all_type_choice() -> None:
    # one training query per type < 2: every type falls back to the all-type tie-break, 0
    r = route_cv(VALUES, GROUPS, TYPES, Routing(tuning=TWO_FOLDS, min_train=2))
    assert r.settings.tolist() == [0, 0, 0, 0]
    assert r.values.tolist() == [1.0, 1.0, 0.0, 0.0]
    assert all(r.choices.filter(pl.col("type") != "*")["fallback"].to_list())


def test_held_out_queries_are_routed_by_the_given_types() -> None:
    config = Routing(tuning=TWO_FOLDS, min_train=1)
    every_y = route_cv(VALUES, GROUPS, TYPES, config, test_types=lambda tr, te: ["y"] * len(te))
    assert every_y.values.tolist() == [0.0, 0.0, 1.0, 1.0]
    assert every_y.routed_by == ["y", "y", "y", "y"]
    unknown = route_cv(VALUES, GROUPS, TYPES, config, test_types=lambda tr, te: ["?"] * len(te))
    assert unknown.settings.tolist() == [0, 0, 0, 0]  # an unlearned type: the all-type choice


def test_weight_space_is_the_fusion_draw_without_the_first_view_alone() -> None:
    config = Routing(views=("a", "b", "c"), tuning=Tuning(weights=(0.0, 1.0)))
    assert weight_space(config) == [[1.0, 0.0, 1.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    # fusion:convex's draw: 64 settings less the one leaving bm25:message alone; its setting 56
    # is the weights every LoCoMo fold chose (runs/final24/locomo/tuning.parquet)
    space = weight_space(Routing())
    assert len(space) == 63
    assert space[56] == [1.0, 1.0, 0.5, 1.0, 0.5]


def test_routing_refuses_bad_configs() -> None:
    with pytest.raises(ValueError, match="min_train"):
        Routing(min_train=0)
    with pytest.raises(ValueError, match="two or more views"):
        Routing(views=("a",))
    with pytest.raises(ValueError, match="groups cannot make"):
        route_cv(VALUES, ["a"] * 4, TYPES, Routing(tuning=TWO_FOLDS))


# --- a fold's choices must not read its own test fold ------------------------------------

N_GROUPS, PER_GROUP = 10, 12
_RNG = np.random.default_rng(7)
BIG_VALUES = _RNG.random((6, N_GROUPS * PER_GROUP))
BIG_GROUPS = [f"c{i // PER_GROUP}" for i in range(N_GROUPS * PER_GROUP)]
BIG_TYPES = [("when", "what", "who")[i % 3] for i in range(N_GROUPS * PER_GROUP)]
BIG_TEXTS = [f"{t} did person {i % 5} do thing {i % 7}" for i, t in enumerate(BIG_TYPES)]
CONFIG = Routing(tuning=Tuning(folds=5), min_train=5, classifier=TypeClassifier())


def _test_folds() -> list[np.ndarray]:
    splits = GroupKFold(n_splits=5).split(np.zeros(len(BIG_GROUPS)), groups=BIG_GROUPS)
    return [test for _, test in splits]


def _scrambled(test: np.ndarray) -> tuple[np.ndarray, list[str], list[str]]:
    """Values, types and texts with the test fold's made to pull every choice elsewhere."""
    values = BIG_VALUES.copy()
    values[:, test] = 0.0
    values[5, test] = 1000.0  # setting 5 would win every choice that read these columns
    types = list(BIG_TYPES)
    texts = list(BIG_TEXTS)
    for i in test:
        types[i] = "leak"  # a type only the test fold has, with words only it has
        texts[i] = "qqq zzz leak leak"
    return values, types, texts


def _fold_rows(choices: pl.DataFrame, fold: int) -> list[tuple[object, ...]]:
    mine = choices.filter((pl.col("fold") == fold) & (pl.col("type") != "leak"))
    return sorted(mine.select("type", "setting").rows())


@pytest.mark.parametrize("fold", range(5))
def test_a_folds_weights_do_not_read_its_test_fold(fold: int) -> None:
    test = _test_folds()[fold]
    clean = route_cv(BIG_VALUES, BIG_GROUPS, BIG_TYPES, CONFIG)
    values, types, _ = _scrambled(test)
    dirty = route_cv(values, BIG_GROUPS, types, CONFIG)
    assert _fold_rows(dirty.choices, fold) == _fold_rows(clean.choices, fold)


@pytest.mark.parametrize("fold", range(5))
def test_a_folds_classifier_does_not_read_its_test_fold(fold: int) -> None:
    test = _test_folds()[fold]
    _, types, texts = _scrambled(test)
    clean = route_cv(
        BIG_VALUES,
        BIG_GROUPS,
        BIG_TYPES,
        CONFIG,
        test_types=predicted_types(texts, BIG_TYPES, CONFIG.classifier),
    )
    dirty = route_cv(
        BIG_VALUES,
        BIG_GROUPS,
        types,
        CONFIG,
        test_types=predicted_types(texts, types, CONFIG.classifier),
    )
    # the test fold's labels are "leak" in the dirty run: a classifier fitted on them says so
    assert [dirty.routed_by[i] for i in test] == [clean.routed_by[i] for i in test]
    assert "leak" not in dirty.routed_by


def test_the_classifier_learns_question_words() -> None:
    route = predicted_types(BIG_TEXTS, BIG_TYPES, TypeClassifier())
    train, test = np.arange(0, 90), np.arange(90, 120)
    assert route(train, test) == [BIG_TYPES[i] for i in test]


def test_learned_routes_fuse_each_query_with_its_types_weights() -> None:
    # two types, two views: x is best with [1, 0] (setting 0), y with [1, 1] (setting 1)
    space = [[1.0, 0.0], [1.0, 1.0]]
    texts = ["when did a", "when did b", "what is c", "what is d"]
    config = Routing(views=("a", "b"), method="convex", norm="min-max", min_train=2)
    routes = learn_routes(VALUES, TYPES, texts, space, config)
    assert routes.weights == {"x": [1.0, 0.0], "y": [1.0, 1.0]}
    assert routes.fallback == [1.0, 0.0]
    assert routes.fell_back == ()
    a = pl.DataFrame(
        {"query_id": ["q1", "q1", "q2", "q2"], "doc_id": ["d1", "d2", "d1", "d2"],
         "score": [2.0, 1.0, 2.0, 1.0]}
    )  # fmt: skip
    b = pl.DataFrame(
        {"query_id": ["q1", "q1", "q2", "q2"], "doc_id": ["d2", "d1", "d2", "d1"],
         "score": [9.0, 0.0, 9.0, 0.0]}
    )  # fmt: skip
    run = routed_run([a, b], {"q1": "x", "q2": "y"}, routes, config)
    # q1 (x): a alone, d1 (1) > d2 (0). q2 (y): weights scaled to 1/2 each, min-max
    # d1 = 0.5 * 1 + 0.5 * 0 = 0.5, d2 = 0.5 * 0 + 0.5 * 1 = 0.5: a tie
    q1 = run.filter(pl.col("query_id") == "q1").sort("rank")
    assert q1["doc_id"].to_list() == ["d1", "d2"]
    assert q1["score"].to_list() == [1.0, 0.0]
    q2 = run.filter(pl.col("query_id") == "q2")
    assert sorted(q2["score"].to_list()) == [0.5, 0.5]
