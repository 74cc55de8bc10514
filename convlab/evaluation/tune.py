"""Tuning without leakage: grouped k-fold cross-validation of a system's settings.

A *system* here is any function ``params -> run`` (a run frame ``query_id, doc_id`` and ``rank``
or ``score``; see :mod:`convlab.fusion.base`). :func:`tune` scores every setting of a search
space on every query with one metric (computed by ir_measures through
:func:`convlab.evaluation.metrics.per_query`, so names are parsed in one place), splits the
queries into folds by group (:mod:`convlab.evaluation.folds`: a group is a conversation, or a
question with its own haystack, so no conversation is both tuned on and tested on),
and for each fold picks the setting with the best mean over the *training* folds' queries only.
Each query's reported value is the value of its own fold's choice: the held-out values,
concatenated, cover every query once and can go into the paired tests of
:mod:`convlab.evaluation.significance` against any other system's per-query values.

Scoring each setting once on all queries and then slicing is the same as running the search
inside each fold, because a query's score under a setting depends on that query alone (the
system must not look at qrels); the choice of a fold reads only its training columns, so no
held-out label can move it. Ties between settings are broken by the order of the space: the
first best setting wins.

Example:
    >>> runs = {1: pl.DataFrame({"query_id": ["a:q0", "b:q0"], "doc_id": ["a:d1", "b:d2"],
    ...                           "score": [1.0, 1.0]})}
    >>> qrels = pl.DataFrame({"query_id": ["a:q0", "b:q0"], "doc_id": ["a:d1", "b:d2"],
    ...                       "relevance": [1, 1]})
    >>> res = tune(lambda p: runs[p["x"]], [{"x": 1}], qrels, Tuning(metric="recall@1", folds=2))
    >>> res.mean
    1.0
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from convlab.evaluation.folds import groups as query_groups
from convlab.evaluation.folds import splits as fold_splits
from convlab.evaluation.metrics import per_query
from convlab.evaluation.queries import relevant_by_query
from convlab.metric_names import parse_metric
from convlab.systems.system import Tuning

__all__ = [
    "TuneResult",
    "cross_validate",
    "grid",
    "random_space",
    "tune",
]

Params = Mapping[str, Any]
System = Callable[[Params], pl.DataFrame]


@dataclass(frozen=True, slots=True)
class TuneResult:
    """What :func:`tune` found.

    Attributes:
        metric: the metric the choice maximised.
        per_query: ``query_id, group, fold, metric, value``: each query's value of the tuned
            metric (and of the reported ones) under its fold's choice: held-out values only,
            in the order of the qrels' queries.
        choices: one row per fold: ``fold, setting`` (index into the space), ``params`` (JSON),
            ``train_mean`` (the chosen setting's mean on the training queries), ``test_mean``,
            ``train_queries``, ``test_queries``, ``test_groups`` (comma-separated).
        scores: ``setting, params, mean`` over all queries, for reference only: choosing from
            it is choosing on the test queries.
        values: per metric, the (settings x queries) matrix of per-query values, queries in
            the order of ``per_query``.
    """

    metric: str
    per_query: pl.DataFrame
    choices: pl.DataFrame
    scores: pl.DataFrame
    values: dict[str, np.ndarray]

    @property
    def mean(self) -> float:
        """The cross-validated mean of the tuned metric (held-out values only)."""
        values = self.per_query.filter(pl.col("metric") == self.metric)["value"]
        return float(values.mean())  # type: ignore[arg-type]


def grid(space: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the values of ``space``, in row-major order.

    Example:
        >>> grid({"a": [1, 2], "b": ["x"]})
        [{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'x'}]
    """
    keys = list(space)
    return [dict(zip(keys, vals, strict=True)) for vals in itertools.product(*space.values())]


def random_space(
    space: Mapping[str, Sequence[Any]], samples: int, *, seed: int = 0
) -> list[dict[str, Any]]:
    """``samples`` distinct settings drawn uniformly from :func:`grid` (seeded), in grid order.

    All of the grid when it has no more than ``samples`` settings.

    Raises:
        ValueError: ``samples`` below 1.
    """
    if samples < 1:
        raise ValueError(f"samples is {samples}; it must be >= 1")
    full = grid(space)
    if len(full) <= samples:
        return full
    rng = np.random.default_rng(seed)
    picked = np.sort(rng.choice(len(full), size=samples, replace=False))
    return [full[i] for i in picked]


def _values(
    run: pl.DataFrame, queries: pl.DataFrame, metrics: Sequence[str], k: int | None
) -> dict[str, np.ndarray]:
    """Each metric of ``run`` per query of ``queries`` (0 for a query the run does not rank)."""
    if "rank" not in run.columns:
        run = run.sort(["query_id", "score", "doc_id"], descending=[False, True, False])
        run = run.with_columns(pl.int_range(1, pl.len() + 1).over("query_id").alias("rank"))
    if k is not None:
        run = run.filter(pl.col("rank") <= k)
    pq = per_query(run.select("query_id", "doc_id", "rank"), queries, metrics)
    ids = queries["query_id"].to_list()
    out = {}
    for m in metrics:
        part = pq.filter(pl.col("metric") == parse_metric(m).name)
        got = dict(zip(part["query_id"].to_list(), part["value"].to_list(), strict=True))
        out[m] = np.array([got.get(q, 0.0) for q in ids], dtype=np.float64)
    return out


def tune(
    system: System,
    space: Sequence[Params],
    qrels: pl.DataFrame,
    config: Tuning | None = None,
    *,
    groups: Sequence[str] | None = None,
    report: Sequence[str] = (),
) -> TuneResult:
    """Cross-validate the choice of a setting of ``system`` from ``space``.

    Args:
        system: builds a run from one setting.
        space: the settings to choose from (see :func:`grid`, :func:`random_space`).
        qrels: ``query_id, doc_id, relevance`` (relevance > 0 is relevant); only queries with a
            relevant doc are scored.
        config: the metric and the number of folds (of :class:`~convlab.systems.system.Tuning`,
            the one tuning config; its grid is the caller's ``space``).
        groups: the group of each scored query, in the order of the queries' first appearance
            in ``qrels`` (default: :func:`convlab.evaluation.folds.groups` of the qrels).
        report: more metrics reported for each fold's choice (never used to choose).

    Returns:
        The held-out values per query, the choice per fold and each setting's overall mean.

    Raises:
        ValueError: an empty space, qrels without a relevant doc, a ``groups`` of the wrong
            length, fewer groups than folds.
    """
    config = config or Tuning()
    if not space:
        raise ValueError("the search space is empty")
    queries = relevant_by_query(qrels)
    if queries.height == 0:
        raise ValueError("no query has a relevant doc in the qrels")
    ids = queries["query_id"].to_list()
    group = list(groups) if groups is not None else query_groups(ids, qrels)
    if len(group) != len(ids):
        raise ValueError(f"{len(group)} groups for {len(ids)} scored queries")
    if len(set(group)) < config.folds:
        raise ValueError(f"{len(set(group))} groups cannot make {config.folds} folds")
    metrics = list(dict.fromkeys([config.metric, *report]))
    cutoffs = [parse_metric(m).k for m in metrics]
    k = None if None in cutoffs else max(c for c in cutoffs if c is not None)
    values_by = [_values(system(p), queries, metrics, k) for p in space]
    values = {parse_metric(m).name: np.vstack([v[m] for v in values_by]) for m in metrics}
    return cross_validate(space, values, ids, group, config)


def cross_validate(
    space: Sequence[Params],
    values: Mapping[str, np.ndarray],
    ids: Sequence[str],
    group: Sequence[str],
    config: Tuning,
) -> TuneResult:
    """The fold logic of :func:`tune`, on per-query values already computed.

    Also how to nest a choice among systems: stack several :attr:`TuneResult.values` (same
    queries, same order) and cross-validate the union of their spaces.

    Args:
        space: the settings, one per row of each matrix.
        values: per metric name, a (settings x queries) matrix; ``config.metric`` chooses.
        ids: the query ids, one per column.
        group: the group of each query.
        config: the metric and the number of folds.

    Raises:
        ValueError: matrices whose shape does not match the space and the queries, or fewer
            groups than folds.
    """
    metric = parse_metric(config.metric).name
    if metric not in values:
        raise ValueError(f"no values of the tuned metric {metric}")
    for name, matrix in values.items():
        if matrix.shape != (len(space), len(ids)):
            raise ValueError(
                f"{name} values are {matrix.shape}; expected ({len(space)}, {len(ids)})"
            )
    if len(group) != len(ids):
        raise ValueError(f"{len(group)} groups for {len(ids)} scored queries")
    if len(set(group)) < config.folds:
        raise ValueError(f"{len(set(group))} groups cannot make {config.folds} folds")
    scores = values[metric]
    fold_of = np.empty(len(ids), dtype=np.int64)
    rows = []
    splits = fold_splits(group, config.folds)
    for fold, (train, test) in enumerate(splits):
        fold_of[test] = fold
        train_means = scores[:, train].mean(axis=1)
        best = int(np.argmax(train_means))  # the first of equal maxima
        rows.append(
            {
                "fold": fold,
                "setting": best,
                "params": json.dumps(dict(space[best]), sort_keys=True, default=str),
                "train_mean": float(train_means[best]),
                "test_mean": float(scores[best, test].mean()),
                "train_queries": len(train),
                "test_queries": len(test),
                "test_groups": ",".join(sorted({group[i] for i in test})),
            }
        )
    choices = pl.DataFrame(rows)
    chosen = choices["setting"].to_numpy()[fold_of]
    schema = {
        "query_id": pl.String,
        "group": pl.String,
        "fold": pl.Int64,
        "metric": pl.String,
        "value": pl.Float64,
    }
    per_q = pl.concat(
        [
            pl.DataFrame(
                {
                    "query_id": ids,
                    "group": group,
                    "fold": fold_of,
                    "metric": [name] * len(ids),
                    "value": matrix[chosen, np.arange(len(ids))],
                },
                schema=schema,
            )
            for name, matrix in values.items()
        ]
    )
    overall = pl.DataFrame(
        {
            "setting": list(range(len(space))),
            "params": [json.dumps(dict(p), sort_keys=True, default=str) for p in space],
            "mean": scores.mean(axis=1),
        }
    )
    return TuneResult(
        metric=metric, per_query=per_q, choices=choices, scores=overall, values=dict(values)
    )
