"""Multi-view systems whose fusion weights are chosen by grouped cross-validation.

Fixed weights are :mod:`convlab.systems.hits`. :func:`tuned_hits` chooses the weights by
grouped cross-validation (:func:`convlab.evaluation.tune.tune`; groups by
:func:`convlab.evaluation.folds.groups`): each fold's choice is made on its training groups
only, and each query's hits are those of its own fold's choice, so every figure computed from
them is a held-out figure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from convlab.evaluation.folds import groups as query_groups
from convlab.fusion import fuse
from convlab.systems.hits import fused_hits, rankings, with_units
from convlab.systems.system import System, Tuning

__all__ = ["Tuned", "tuned_hits"]


@dataclass(frozen=True, slots=True)
class Tuned:
    """A cross-validated system: its held-out hits and what each fold chose.

    Attributes:
        hits: each query's hits under its own fold's choice.
        choices: one row per fold (``fold, setting, params, train_mean, test_mean, ...``:
            :attr:`convlab.evaluation.tune.TuneResult.choices`), with ``system``.
        chosen: the setting best over all queries: what to run on other data (chosen on
            these very queries, so never a result here); ``weights`` and the tuned params.
        folds: the number of folds (0 when there were too few groups to cross-validate and
            the system's fixed weights were used).
    """

    hits: pl.DataFrame
    choices: pl.DataFrame
    chosen: dict[str, Any]
    folds: int


def _space(n_views: int, tuning: Tuning) -> list[dict[str, Any]]:
    """The settings tried: a weight per view after the first, and the tuned fusion params."""
    from convlab.evaluation.tune import random_space

    grid: dict[str, Sequence[Any]] = {f"w{i}": tuning.weights for i in range(1, n_views)}
    grid.update(tuning.params)
    space = random_space(grid, tuning.samples, seed=tuning.seed)
    # a setting where only the first view counts is the first view alone: drop it
    return [p for p in space if any(p[f"w{i}"] > 0 for i in range(1, n_views))] or space


def _setting(p: Mapping[str, Any], n_views: int) -> tuple[list[float], dict[str, Any]]:
    weights = [1.0] + [float(p[f"w{i}"]) for i in range(1, n_views)]
    return weights, {k: v for k, v in p.items() if not k.startswith("w")}


def tuned_hits(
    system: System,
    view_hits: Sequence[pl.DataFrame],
    queries: pl.DataFrame,
    *,
    depth: int,
    haystacks: bool = False,
) -> Tuned:
    """``system``'s hits with its weights chosen by grouped cross-validation.

    Args:
        system: a fused system with :attr:`~convlab.systems.system.System.tuning`.
        view_hits: its views' hits, in its view order.
        queries: the labelled queries (``query_id``, ``conversation_id``, ``relevant``).
        depth: docs kept per query.
        haystacks: each query has its own haystack (each question its own group).

    Raises:
        ValueError: a system without tuning.
    """
    from convlab.evaluation.tune import tune  # scikit-learn: only when tuning

    tuning = system.tuning
    if tuning is None:
        raise ValueError(f"system {system.name!r} has no tuning")
    n = len(system.views)
    memo: dict[str, pl.DataFrame] = {}
    aligned = rankings(view_hits)  # aligned once, fused under every setting

    def run(p: Mapping[str, Any]) -> pl.DataFrame:
        """The fused ranking alone: tuning scores it; units join only the settings chosen."""
        key = json.dumps(dict(p), sort_keys=True)
        if key not in memo:
            weights, extra = _setting(p, n)
            params = {**system.fusion_params, **extra}
            memo[key] = fuse(aligned, weights, method=system.fusion, depth=depth, **params)
        return memo[key]

    groups = query_groups(queries["query_id"].to_list(), queries, haystacks=haystacks)
    group_of = dict(zip(queries["query_id"].to_list(), groups, strict=True))
    scored = queries.filter(pl.col("relevant").list.len() > 0)
    n_groups = len({group_of[q] for q in scored["query_id"]})
    if n_groups < 2:
        weights = list(system.weights) if system.weights is not None else [1.0] * n
        chosen = {"weights": weights, "params": {}, "cv": False}
        hits = fused_hits(
            view_hits,
            weights,
            method=system.fusion,
            params=system.fusion_params,
            depth=depth,
            runs=aligned,
        )
        return Tuned(hits, pl.DataFrame(), chosen, 0)
    space = _space(n, tuning)
    qrels = scored.select("query_id", pl.col("relevant").alias("doc_id")).explode("doc_id")
    qrels = qrels.with_columns(pl.lit(1).alias("relevance"))
    config = replace(tuning, folds=min(tuning.folds, n_groups))
    result = tune(run, space, qrels, config, groups=[group_of[q] for q in _first_seen(qrels)])
    fold_of_group = dict(result.per_query.select("group", "fold").unique().iter_rows())
    ranked = result.scores.sort("mean", "setting", descending=[True, False])
    best_overall = int(ranked["setting"][0])
    settings = result.choices["setting"].to_list()
    parts = []
    for setting, ids in _by_fold(queries, group_of, fold_of_group, settings, best_overall):
        mine = run(space[setting]).filter(pl.col("query_id").is_in(ids))
        parts.append(with_units(mine, view_hits, _setting(space[setting], n)[0]))
    hits = pl.concat(parts).sort("query_id", "rank")
    weights, extra = _setting(space[best_overall], n)
    chosen = {"weights": weights, "params": extra, "cv": True}
    choices = result.choices.with_columns(pl.lit(system.name).alias("system"))
    return Tuned(hits, choices, chosen, config.folds)


def _first_seen(qrels: pl.DataFrame) -> list[str]:
    return list(dict.fromkeys(qrels["query_id"].to_list()))


def _by_fold(
    queries: pl.DataFrame,
    group_of: Mapping[str, str],
    fold_of_group: Mapping[str, int],
    settings: Sequence[int],
    fallback: int,
) -> list[tuple[int, list[str]]]:
    """(setting, query ids) per setting used: a query takes its group's fold's choice.

    A query whose group has no scored query (so no fold) takes ``fallback``: it has no label,
    so no figure depends on it.
    """
    by_setting: dict[int, list[str]] = {}
    for q in queries["query_id"].to_list():
        fold = fold_of_group.get(group_of[q])
        setting = settings[fold] if fold is not None else fallback
        by_setting.setdefault(setting, []).append(q)
    return sorted(by_setting.items())
