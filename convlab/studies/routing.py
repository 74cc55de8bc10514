"""Routing: fusion weights chosen per question type, by grouped cross-validation.

A fused system (:mod:`convlab.evaluation.multiview`) chooses one weight setting for every
question. Routing chooses one per question *type* (LoCoMo's categories: multi-hop, temporal,
open-domain, single-hop, adversarial): in each fold, for each type, the setting with the best
mean of the tuned metric over that type's *training* queries; a type with fewer than
:attr:`Routing.min_train` training queries (a threshold fixed before any run) takes the fold's
all-type choice, the choice the fused system itself makes. A held-out query takes the setting of
its type, the type being either the gold one (LoCoMo carries it) or the one a question
classifier predicts (TF-IDF of the question text, logistic regression; :func:`fit_classifier`)
trained on the fold's training queries only. Only the predicted route transfers to data without
categories: :func:`learn_routes` learns both on all of one data set (LoCoMo) and
:meth:`Routes.assign` applies them, unchanged, to the questions of another.

Both the per-type choice and the classifier read the training indices of a fold only: the
held-out queries' values and labels cannot move them (``tests/evaluation/test_routing.py``
checks it by scrambling them).

Example:
    >>> values = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    >>> config = Routing(tuning=Tuning(folds=2), min_train=1)
    >>> r = route_cv(values, ["a", "b", "a", "b"], ["x", "x", "y", "y"], config)
    >>> r.values.tolist()
    [1.0, 1.0, 1.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline

from convlab.evaluation import folds as cv_folds
from convlab.evaluation.tune import random_space
from convlab.fusion import fuse
from convlab.systems.system import Tuning

__all__ = [
    "FUSION_VIEWS",
    "Routed",
    "Routes",
    "Routing",
    "TypeClassifier",
    "fit_classifier",
    "learn_routes",
    "predicted_types",
    "route_cv",
    "routed_run",
    "weight_space",
]

FUSION_VIEWS = ("bm25:message", "bm25:sequential", "bm25:turn_pair", "sequential", "turn_pair")
"""The views of the default fusion (``fusion:convex``), in its order."""

TestTypes = Callable[[np.ndarray, np.ndarray], Sequence[str]]
"""(training indices, test indices) -> the type each test query is routed by."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TypeClassifier:
    """The question-type classifier: TF-IDF of the question, then logistic regression.

    Fixed before any run (nothing of it is tuned).

    Attributes:
        ngrams: word n-grams from 1 to this.
        c: the inverse regularisation strength of the logistic regression.
        max_iter: its iterations at most.
    """

    ngrams: int = 2
    c: float = 1.0
    max_iter: int = 2000

    def __post_init__(self) -> None:
        if self.ngrams < 1 or self.c <= 0 or self.max_iter < 1:
            raise ValueError(f"bad classifier {self}: ngrams >= 1, c > 0, max_iter >= 1")


@dataclass(frozen=True, slots=True, kw_only=True)
class Routing:
    """How routing chooses: the fusion, its weight space, the threshold, the classifier.

    Attributes:
        views: the fused runs, in order (the first keeps weight 1).
        method: the fusion method (:data:`convlab.fusion.FUSIONS`).
        norm: its score normalisation.
        tuning: the weight grid, the settings drawn, the metric, the folds and the seed: those
            of ``fusion:convex`` by default, so the all-type choice is that system's.
        min_train: a type with fewer training queries in a fold takes the all-type choice
            (fixed in advance: 50).
        classifier: the question-type classifier of the predicted route.
    """

    views: tuple[str, ...] = FUSION_VIEWS
    method: str = "convex"
    norm: str = "z-score"
    tuning: Tuning = field(default_factory=Tuning)
    min_train: int = 50
    classifier: TypeClassifier = field(default_factory=TypeClassifier)

    def __post_init__(self) -> None:
        object.__setattr__(self, "views", tuple(self.views))
        if len(self.views) < 2:
            raise ValueError(f"routing fuses two or more views, not {list(self.views)}")
        if self.min_train < 1:
            raise ValueError(f"min_train is {self.min_train}; it must be >= 1")


def weight_space(config: Routing) -> list[list[float]]:
    """The weight settings tried: the first view 1, the others drawn as ``fusion:convex`` does.

    The same draw as :mod:`convlab.evaluation.multiview` (``w1..wN`` from the tuning's grid,
    ``samples`` settings, its seed; a setting with every other view at 0 is dropped).

    Example:
        >>> weight_space(Routing(views=("a", "b"), tuning=Tuning(weights=(0.0, 1.0))))
        [[1.0, 1.0]]
    """
    n, tuning = len(config.views), config.tuning
    grid = {f"w{i}": tuning.weights for i in range(1, n)}
    space = random_space(grid, tuning.samples, seed=tuning.seed)
    kept = [p for p in space if any(p[f"w{i}"] > 0 for i in range(1, n))] or space
    return [[1.0] + [float(p[f"w{i}"]) for i in range(1, n)] for p in kept]


@dataclass(frozen=True, slots=True)
class Routed:
    """What :func:`route_cv` found.

    Attributes:
        values: each query's held-out value under the setting of its routed type.
        settings: that setting (an index into the space), per query.
        folds: each query's fold.
        routed_by: the type each query was routed by.
        choices: ``fold, type, setting, train_queries, fallback``: each fold's choice per type
            (``type`` ``*`` is the all-type choice).
    """

    values: np.ndarray
    settings: np.ndarray
    folds: np.ndarray
    routed_by: list[str]
    choices: pl.DataFrame


def _choose(
    scores: np.ndarray, train: np.ndarray, types: np.ndarray, kinds: Sequence[str], least: int
) -> tuple[int, dict[str, tuple[int, int, bool]]]:
    """The all-type choice and, per type, (setting, training queries, fell back)."""
    overall = int(np.argmax(scores[:, train].mean(axis=1)))  # the first of equal maxima
    per_type = {}
    for kind in kinds:
        mine = train[types[train] == kind]
        if mine.size >= least:
            per_type[kind] = (int(np.argmax(scores[:, mine].mean(axis=1))), int(mine.size), False)
        else:
            per_type[kind] = (overall, int(mine.size), True)
    return overall, per_type


def route_cv(
    values: np.ndarray,
    groups: Sequence[str],
    types: Sequence[str],
    config: Routing,
    *,
    test_types: TestTypes | None = None,
) -> Routed:
    """Cross-validate routing: per fold, per type, the best setting on that type's training queries.

    Args:
        values: (settings x queries) values of the tuned metric.
        groups: each query's group (:func:`convlab.evaluation.folds.groups`).
        types: each query's gold type: training queries are grouped by it.
        config: the folds (``config.tuning.folds``) and the threshold.
        test_types: the type each held-out query is routed by, from the fold's indices
            (default: its gold type; :func:`predicted_types` for a classifier's).

    Raises:
        ValueError: shapes that do not match, or fewer groups than folds.
    """
    scores = np.asarray(values, dtype=np.float64)
    n = scores.shape[1]
    if len(groups) != n or len(types) != n:
        raise ValueError(f"{len(groups)} groups and {len(types)} types for {n} queries")
    if len(set(groups)) < config.tuning.folds:
        raise ValueError(f"{len(set(groups))} groups cannot make {config.tuning.folds} folds")
    gold = np.asarray(types, dtype=object)
    kinds = sorted(set(types))
    route = test_types or (lambda _train, test: list(gold[test]))
    setting = np.zeros(n, dtype=np.int64)
    fold_of = np.zeros(n, dtype=np.int64)
    routed_by: list[str] = [""] * n
    rows: list[dict[str, Any]] = []
    splits = cv_folds.splits(list(groups), config.tuning.folds)
    for fold, (train, test) in enumerate(splits):
        overall, per_type = _choose(scores, train, gold, kinds, config.min_train)
        rows.append(
            {"fold": fold, "type": "*", "setting": overall, "train_queries": train.size}
            | {"fallback": False}
        )
        rows += [
            {"fold": fold, "type": k, "setting": s, "train_queries": m, "fallback": f}
            for k, (s, m, f) in per_type.items()
        ]
        for i, kind in zip(test, route(train, test), strict=True):
            setting[i] = per_type[kind][0] if kind in per_type else overall
            routed_by[i] = kind
            fold_of[i] = fold
    return Routed(
        values=scores[setting, np.arange(n)],
        settings=setting,
        folds=fold_of,
        routed_by=routed_by,
        choices=pl.DataFrame(rows),
    )


def fit_classifier(texts: Sequence[str], labels: Sequence[str], config: TypeClassifier) -> Pipeline:
    """A question-type classifier fitted on ``texts`` and their ``labels``.

    Example:
        >>> clf = fit_classifier(["when did", "when was", "what is", "what was"],
        ...                      ["t", "t", "o", "o"], TypeClassifier(c=10.0))
        >>> clf.predict(["when is"]).tolist()
        ['t']
    """
    model = make_pipeline(
        TfidfVectorizer(ngram_range=(1, config.ngrams), sublinear_tf=True, lowercase=True),
        LogisticRegression(C=config.c, max_iter=config.max_iter),
    )
    return model.fit(list(texts), list(labels))


def predicted_types(
    texts: Sequence[str], types: Sequence[str], config: TypeClassifier
) -> TestTypes:
    """Route held-out queries by a classifier fitted on the fold's training queries only."""
    text_array = np.asarray(texts, dtype=object)
    gold = np.asarray(types, dtype=object)

    def route(train: np.ndarray, test: np.ndarray) -> list[str]:
        model = fit_classifier(list(text_array[train]), list(gold[train]), config)
        return [str(t) for t in model.predict(list(text_array[test]))]

    return route


@dataclass(frozen=True, slots=True)
class Routes:
    """Routing learned on all of one data set, to apply unchanged to another.

    Attributes:
        weights: per type, the weights of its choice.
        fallback: the all-type choice's weights (a type the classifier names but not learned).
        train_queries: per type, the queries its choice was made on.
        fell_back: the types below the threshold, which take ``fallback``.
        classifier: the question-type classifier fitted on every query.
    """

    weights: Mapping[str, list[float]]
    fallback: list[float]
    train_queries: Mapping[str, int]
    fell_back: tuple[str, ...]
    classifier: Pipeline

    def assign(self, texts: Sequence[str]) -> list[str]:
        """The type each question is routed by (the classifier's prediction)."""
        return [str(t) for t in self.classifier.predict(list(texts))]

    def as_dict(self) -> dict[str, Any]:
        """The routes as plain data (the classifier named by its classes)."""
        return {
            "weights": dict(self.weights),
            "fallback": self.fallback,
            "train_queries": dict(self.train_queries),
            "fell_back": list(self.fell_back),
            "classes": [str(c) for c in self.classifier.classes_],
        }


def learn_routes(
    values: np.ndarray,
    types: Sequence[str],
    texts: Sequence[str],
    space: Sequence[Sequence[float]],
    config: Routing,
) -> Routes:
    """The per-type choices and the classifier, made on every query of one data set."""
    gold = np.asarray(types, dtype=object)
    every = np.arange(len(types))
    kinds = sorted(set(types))
    overall, per_type = _choose(np.asarray(values), every, gold, kinds, config.min_train)
    return Routes(
        weights={k: list(space[s]) for k, (s, _, _) in per_type.items()},
        fallback=list(space[overall]),
        train_queries={k: m for k, (_, m, _) in per_type.items()},
        fell_back=tuple(k for k, (_, _, f) in per_type.items() if f),
        classifier=fit_classifier(texts, types, config.classifier),
    )


def routed_run(
    runs: Sequence[pl.DataFrame],
    route_of: Mapping[str, str],
    routes: Routes,
    config: Routing,
) -> pl.DataFrame:
    """The fused run in which each query is fused with the weights of its routed type.

    Args:
        runs: the views' runs (``query_id, doc_id, score``), in ``config.views`` order.
        route_of: query id -> its routed type; a query left out takes the fallback.
        routes: what :func:`learn_routes` learned.
        config: the fusion method and normalisation.
    """
    by_weights: dict[tuple[float, ...], list[str]] = {}
    every = set().union(*(r["query_id"].unique().to_list() for r in runs))
    for q in sorted(every):
        w = routes.weights.get(route_of.get(q, ""), routes.fallback)
        by_weights.setdefault(tuple(w), []).append(q)
    parts = []
    for weights, ids in by_weights.items():
        mine = [r.filter(pl.col("query_id").is_in(ids)) for r in runs]
        parts.append(fuse(mine, list(weights), method=config.method, norm=config.norm))
    return pl.concat(parts).sort("query_id", "rank")
