"""Run retrieval systems over labelled queries: metrics, significance, resurrection budgets.

:func:`evaluate` builds every strategy's units and indexes once through the one build recipe
(:func:`convlab.build.build_indexes`: the corpus chunked once, each distinct text embedded once
across strategies), runs every :class:`~convlab.systems.system.System`, and returns an
:class:`~convlab.evaluation.result.Evaluation`.

It does not call :func:`convlab.systems.search.search_system` (the store's search): it searches
each view once for every system with a :class:`~convlab.retrieval.search.Searcher` under
:func:`~convlab.systems.hits.view_options` (per haystack where there are haystacks) to the
evaluation's depth, and ranks with :func:`~convlab.systems.hits.system_hits` (fixed weights) or
:func:`~convlab.evaluation.multiview.tuned_hits` (weights by grouped CV): ``search_system``'s
parts, without its cut at ``k`` and its matches.

Scopes: ``conversation`` searches each query inside its own conversation (LoCoMo's protocol);
``haystack`` searches each query inside its own set of conversations (LongMemEval's protocol:
:attr:`~convlab.evaluation.datasets.LabelledData.haystacks`, the index's rows of those
conversations, never a copy); ``corpus`` searches the whole corpus. Metrics prefixed ``session:``
judge the sessions the docs belong to (:func:`convlab.evaluation.metrics.collapse_to_sessions`),
against :attr:`convlab.evaluation.datasets.LabelledData.sessions`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import polars as pl
from tqdm.auto import tqdm

from convlab.build import BuiltIndex, build_indexes
from convlab.built import BuildManifest
from convlab.embed.device import device_of
from convlab.embed.factory import companion_embedder
from convlab.evaluation import folds
from convlab.evaluation.config import EvalConfig
from convlab.evaluation.datasets import LabelledData
from convlab.evaluation.metrics import aggregate, per_query
from convlab.evaluation.multiview import Tuned, tuned_hits
from convlab.evaluation.provenance import fingerprint, versions
from convlab.evaluation.result import Evaluation
from convlab.evaluation.significance import compare
from convlab.evaluation.system_costs import pass_embedder, system_costs
from convlab.pipeline.keys import KeyExpansion
from convlab.protocols import Embedder
from convlab.resurrection import budget_measures
from convlab.resurrection.shared import Shared
from convlab.retrieval import SearchOptions, search_haystacks, search_many
from convlab.systems.hits import system_hits, view_options
from convlab.systems.system import System

if TYPE_CHECKING:
    from convlab.evaluation.lme_scores import OfficialScores

__all__ = ["evaluate"]


def evaluate(
    data: LabelledData,
    systems: list[System],
    *,
    embedder: Embedder,
    config: EvalConfig | None = None,
    progress: bool | None = None,
) -> Evaluation:
    """Run ``systems`` over ``data``'s queries.

    Args:
        data: corpus and labelled queries.
        systems: what to compare; the first (or ``config.baseline``) is the baseline.
        embedder: an embedder (wrap it in :class:`convlab.embed.CachedEmbedder` to reuse work).
        config: metrics, budgets, scope, depth.
        progress: tqdm bars (None: auto).

    Raises:
        ValueError: a baseline that is not one of the systems, or a scope the data cannot be
            searched in.
    """
    config = config or EvalConfig()
    started = time.perf_counter()
    baseline = config.baseline or systems[0].name
    _check_names(systems, baseline)
    _check_scope(data, config.scope)
    _check_protocol(data, config.protocol)
    embedders: dict[str | None, Embedder] = {None: embedder}
    for name in dict.fromkeys(v.embedder for s in systems for v in s.views if v.embedder):
        embedders[name] = companion_embedder(name, embedder)  # static:VIEW's
    built = _build(data, systems, embedders=embedders, config=config)
    hits: dict[str, pl.DataFrame] = {}
    view_hits: dict[tuple[Variant, str, str], pl.DataFrame] = {}
    tuning, tuned = [], {}
    # (text, strategies) -> the units and chunks resurrection reads and their look-ups: the same
    # for every system of the same strategies, so the look-ups are made once (Shared.of)
    resurrectable: dict[tuple[Variant, tuple[str, ...]], Resurrectable] = {}
    pq, budget_rows, policy_rows = [], [], []
    for system in tqdm(systems, desc="systems", disable=progress is False):
        views = []
        for view in system.views:
            key = (_variant(system), view.name, json.dumps(system.options.as_dict(), default=str))
            if key not in view_hits:
                view_hits[key] = _search(
                    data,
                    built[(_variant(system), view.index_key)],
                    view_options(system, view, config.depth),
                    embedder=embedders[view.embedder],
                    config=config,
                )
            views.append(view_hits[key])
        h = _system_hits(system, views, data, config.depth)
        if isinstance(h, Tuned):
            tuning.append(h.choices)
            tuned[system.name] = {**h.chosen, "folds": h.folds}
            h = h.hits
        hits[system.name] = h
        pq.append(
            per_query(
                h, data.queries, config.metrics, sessions=data.sessions, judged=data.judged
            ).with_columns(pl.lit(system.name).alias("system"))
        )
        own, grid = _policy_measures(
            system, h, data.queries, _resurrectable(system, built, resurrectable), config
        )
        budget_rows.append(own)
        policy_rows += grid
    budgets = pl.concat(budget_rows)
    per_q = _per_query_frame(pq, budgets, data.queries)
    summary = aggregate(per_q, by=["system"])
    by_cat = aggregate(per_q, by=["system", "category"])
    sig = compare(per_q.select("system", "query_id", "metric", "value"), baseline, seed=config.seed)
    category_sig = _category_significance(per_q, baseline, config)
    official = _official(data, hits, baseline, config)
    units_by = {_label(text, s): b.units for (text, s), b in built.items()}
    cfg = _record(data, systems, baseline, embedder, config, units_by, started)
    cfg["tuned"] = tuned
    n_folds = next((s.tuning.folds for s in systems if s.fused and s.tuning), folds.FOLDS)
    groups = folds.query_folds(data.queries, haystacks=data.haystacks is not None, folds=n_folds)
    cfg["groups"] = folds.record(groups, haystacks=data.haystacks is not None)
    cfg["unit_costs"], cfg["embedding"] = _costs(built)
    cfg["system_costs"] = system_costs(systems, built, _variant).to_dicts()
    policy_budgets = pl.concat(policy_rows) if policy_rows else pl.DataFrame()
    chosen = pl.concat(tuning, how="diagonal_relaxed") if tuning else pl.DataFrame()
    return Evaluation(per_q, summary, by_cat, sig, category_sig, budgets, hits, units_by, cfg,
                      policy_budgets, tuning=chosen, official=official, groups=groups)  # fmt: skip


def _check_names(systems: list[System], baseline: str) -> None:
    """Refuse two systems of one name, and a baseline that is none of them."""
    names = [s.name for s in systems]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"two systems share a name: {twice}")
    if baseline not in names:
        raise ValueError(f"baseline {baseline!r} is not one of the systems")


def _policy_measures(
    system: System,
    hits: pl.DataFrame,
    queries: pl.DataFrame,
    frames: Resurrectable,
    config: EvalConfig,
) -> tuple[pl.DataFrame, list[pl.DataFrame]]:
    """The system's budget measures under its own policy, and under each policy of the grid.

    The grid (``policy`` column added) is empty unless ``config.resurrection`` names several.
    """
    own = system.resurrection or config.resurrection[0]
    measured = {
        policy: budget_measures(
            hits,
            queries,
            units=frames.units,
            chunks=frames.chunks,
            budgets=config.budgets,
            policy=policy,
            shared=frames.shared,
        ).with_columns(pl.lit(system.name).alias("system"))
        for policy in [own, *(p for p in config.resurrection if p != own)]
    }
    several = len(config.resurrection) > 1
    grid = [
        frame.with_columns(pl.lit(policy).alias("policy"))
        for policy, frame in measured.items()
        if several and policy in config.resurrection
    ]
    return measured[own], grid


Variant = tuple[str | None, KeyExpansion | None]
"""What a system's units are made with besides the strategy: its text format and key expansion."""


def _variant(system: System) -> Variant:
    """The system's text format and key expansion (None each: the evaluation's)."""
    return (system.text, system.keys)


def _label(variant: Variant, strategy: str) -> str:
    """How reports name a strategy's units: ``sequential``, ``sequential[locomo]``, ...

    ``sequential[keys=session:5]`` for units with keyphrases, ``sequential[locomo,keys=...]``.
    """
    text, keys = variant
    parts = [p for p in (text, None if keys is None else keys.label) if p is not None]
    return f"{strategy}[{','.join(parts)}]" if parts else strategy


def _build(
    data: LabelledData,
    systems: list[System],
    *,
    embedders: Mapping[str | None, Embedder],
    config: EvalConfig,
) -> dict[tuple[Variant, str], BuiltIndex]:
    """Every (variant, view index key) the systems' views need: one build per variant and embedder.

    A variant is a text format and a key expansion (:data:`Variant`); a view of another
    embedder (``static:sequential``) is built apart, keyed by :attr:`View.index_key`.

    Each build chunks the corpus once and embeds each distinct text once (across strategies);
    a strategy gets vectors only if a view searches it densely, BM25 only if one searches it
    by BM25.
    """
    built: dict[tuple[Variant, str], BuiltIndex] = {}
    for variant in dict.fromkeys(_variant(s) for s in systems):
        views = [v for s in systems if _variant(s) == variant for v in s.views]
        for name in dict.fromkeys(v.embedder for v in views):
            mine = [v for v in views if v.embedder == name]
            made = build_indexes(
                data.corpus,
                config.units(dict.fromkeys(v.strategy for v in mine), *variant),
                embedder=embedders[name],
                dense={v.strategy for v in mine if v.retrieval.needs_vectors},
                lexical={v.strategy for v in mine if v.retrieval.needs_bm25},
            )
            key = (lambda s: s) if name is None else (lambda s, n=name: f"{n}:{s}")
            built.update({(variant, key(s)): b for s, b in made.items()})
    return built


def _system_hits(
    system: System, views: list[pl.DataFrame], data: LabelledData, depth: int
) -> pl.DataFrame | Tuned:
    """Cross-validated weights for a tuned system; else :func:`system_hits` (the store's too)."""
    if system.fused and system.tuning is not None:
        haystacks = data.haystacks is not None
        return tuned_hits(system, views, data.queries, depth=depth, haystacks=haystacks)
    return system_hits(system, views, depth=depth)


class Resurrectable(NamedTuple):
    """The units a system's hits point to, their chunks, and the look-ups of both."""

    units: pl.DataFrame
    chunks: pl.DataFrame
    shared: Shared


def _resurrectable(
    system: System,
    built: dict[tuple[Variant, str], BuiltIndex],
    made: dict[tuple[Variant, tuple[str, ...]], Resurrectable],
) -> Resurrectable:
    """The units a system's hits point to (every view's strategy), their chunks, the look-ups.

    Made once per (text format, strategies) and kept in ``made``.
    """
    strategies = tuple(dict.fromkeys(v.index_key for v in system.views))
    key = (_variant(system), strategies)
    if key not in made:
        parts = [built[(_variant(system), s)] for s in strategies]
        units = parts[0].units if len(parts) == 1 else pl.concat([b.units for b in parts])
        made[key] = Resurrectable(units, parts[0].chunks, Shared.of(units, parts[0].chunks))
    return made[key]


def _costs(
    built: dict[tuple[Variant, str], BuiltIndex],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each strategy's units and embedding cost, and what the embedding passes took.

    The units, units per message, distinct texts and tokens embedded per strategy
    (:func:`convlab.pipeline.unit_costs.unit_costs`, per text format); the passes' seconds
    and cache counts (one pass per text format embeds every dense strategy's texts together,
    so its time is the pass's, never split per strategy).
    """
    from convlab.pipeline.unit_costs import messages_with_text, unit_costs

    rows: list[dict[str, Any]] = []
    passes: dict[tuple[Variant, str | None], BuildManifest] = {}
    for (text, key), b in built.items():  # one pass per text format and view embedder
        passes.setdefault((text, pass_embedder(key)), b.manifest)
    for text in dict.fromkeys(t for t, _ in built):
        mine = {_label(text, s): b for (t, s), b in built.items() if t == text}
        first = next(iter(mine.values()))
        costs = unit_costs(
            {label: b.units for label, b in mine.items()},
            messages_with_text(first.chunks),
            dense={label for label, b in mine.items() if b.manifest.dense},
            total=_label(text, "all"),
        )
        rows += costs.to_dicts()
    counts: dict[str, Any] = {"seconds": 0.0, "cpu_seconds": 0.0}
    for m in passes.values():
        counts["seconds"] += m.seconds["embed"]
        counts["cpu_seconds"] += m.seconds.get("embed_cpu", 0.0)
        for k, v in m.embedding.items():
            counts[k] = counts.get(k, 0) + v
    counts["seconds"] = round(counts["seconds"], 1)
    counts["cpu_seconds"] = round(counts["cpu_seconds"], 1)
    return rows, counts


def _check_scope(data: LabelledData, scope: str) -> None:
    """A scope the data can be searched in, or a ValueError saying which to use."""
    if scope == "haystack" and data.haystacks is None:
        raise ValueError(f"{data.name} has no per-query haystacks: use scope 'conversation'")
    if scope == "conversation" and data.haystacks is not None:
        raise ValueError(
            f"{data.name}'s queries are scoped to haystacks of sessions: use scope 'haystack'"
        )


def _check_protocol(data: LabelledData, protocol: str) -> None:
    """Data read under the protocol it is judged by, or a ValueError saying how to read it."""
    if protocol == "longmemeval" and data.official is None:
        raise ValueError(
            f"{data.name} was not read under the longmemeval protocol: load it with "
            "load_labelled(path, protocol='longmemeval')"
        )


def _official(
    data: LabelledData, hits: dict[str, pl.DataFrame], baseline: str, config: EvalConfig
) -> OfficialScores | None:
    """LongMemEval's official measures of every system, under its protocol; else ``None``."""
    if data.official is None or config.protocol != "longmemeval":
        return None
    from convlab.evaluation.lme_scores import score_official

    return score_official(hits, data.official, baseline=baseline, seed=config.seed)


def _search(
    data: LabelledData,
    built: BuiltIndex,
    options: SearchOptions,
    *,
    embedder: Embedder,
    config: EvalConfig,
) -> pl.DataFrame:
    """One view's hits for every query (``options``: :func:`view_options`) in the scope."""
    opts = options
    if config.scope == "haystack" and data.haystacks is not None:
        return search_haystacks(
            built.index,
            data.queries,
            data.haystacks,
            embedder=embedder,
            options=opts,
            bm25=built.bm25,
        )
    return search_many(
        built.index,
        data.queries,
        embedder=embedder,
        options=opts,
        bm25=built.bm25,
        scoped=config.scope == "conversation",
    )


def _per_query_frame(
    metrics: list[pl.DataFrame], budgets: pl.DataFrame, queries: pl.DataFrame
) -> pl.DataFrame:
    """``system, query_id, category, metric, value``: the metrics and coverage at each budget.

    Coverage joins the per-query metrics so that it is averaged, split and tested alike.
    """
    coverage = budgets.filter(pl.col("coverage").is_not_null()).select(
        "query_id",
        pl.format("coverage@{}", pl.col("budget")).alias("metric"),
        pl.col("coverage").alias("value"),
        "system",
    )
    per_q = pl.concat([*metrics, coverage], how="diagonal_relaxed")
    per_q = per_q.join(queries.select("query_id", "category"), on="query_id", how="left")
    return per_q.select("system", "query_id", "category", "metric", "value")


def _category_significance(per_q: pl.DataFrame, baseline: str, config: EvalConfig) -> pl.DataFrame:
    """The paired tests inside each category, for the headline metrics."""
    parts = [
        compare(
            part.select("system", "query_id", "metric", "value"), baseline, seed=config.seed
        ).with_columns(pl.lit(category).alias("category"))
        for (category,), part in per_q.filter(pl.col("metric").is_in(config.headline)).group_by(
            "category", maintain_order=True
        )
    ]
    return pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame()


def _record(
    data: LabelledData,
    systems: list[System],
    baseline: str,
    embedder: Embedder,
    config: EvalConfig,
    units: dict[str, pl.DataFrame],
    started: float,
) -> dict[str, Any]:
    """Everything the run's figures depend on, saved as its ``config.json``.

    Raises:
        TypeError: something in it is not JSON (raised here, not when the run is saved).
    """
    queries = data.queries
    cfg = {
        "config": {
            k: (v.as_dict() if hasattr(v, "as_dict") else v)
            for k, v in ((f, getattr(config, f)) for f in config.__dataclass_fields__)
        },
        "systems": [s.as_dict() for s in systems],
        "baseline": baseline,
        "model_id": embedder.model_id,
        "device": device_of(embedder),  # provenance: the vectors do not depend on it
        "data": {
            "name": data.name,
            "fingerprint": fingerprint(data),
            "conversations": data.corpus.conversations.height,
            "queries": queries.height,
            "haystacks": data.haystacks is not None,
            "judged_queries": queries.filter(pl.col("relevant").list.len() > 0).height,
            "cleaning": data.cleaning,
        },
        "units": {s: u.height for s, u in units.items()},
        "versions": versions(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    json.dumps(cfg, default=str)
    return cfg
