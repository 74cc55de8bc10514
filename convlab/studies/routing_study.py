"""Routing measured on run folders (the library of ``python -m eval.routing``).

:func:`routing_cv` (a :class:`RoutingStudy` without ``transfer_from``): on a run folder of data
that carries question types (LoCoMo), the views' TREC runs fused under every weight setting of
:func:`convlab.studies.routing.weight_space` (scored once, sliced per fold,
:func:`convlab.evaluation.tune.tune`), then routed by grouped cross-validation
(:func:`convlab.studies.routing.route_cv`) by the gold type and by the type a classifier
trained on the fold's training conversations predicts; the all-type choice (the fused system's
own) beside them. :func:`transfer` (with ``transfer_from``): the routes and the classifier
learned on all of the source folder's data, applied unchanged to the target folder's questions.

Every routed system is tested, paired over queries, against the folder's ``fusion:convex`` (and
its ``bm25:message``) with the paired randomization test, Holm-adjusted over the routed systems
overall and over (category x system) within categories. Writes ``routing.json``, ``routing.md``,
``per_query.parquet`` and ``choices.parquet`` under ``out``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from convlab.atomic import write_file_atomic
from convlab.defaults import SYSTEM
from convlab.evaluation import folds as cv_folds
from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.metrics import per_query
from convlab.evaluation.queries import read_qrels, relevant_by_query
from convlab.evaluation.run_files import read_runs
from convlab.evaluation.significance import holm, paired_randomization
from convlab.evaluation.tune import tune
from convlab.fusion import fuse
from convlab.studies.routing import (
    Routing,
    learn_routes,
    predicted_types,
    route_cv,
    routed_run,
    weight_space,
)

__all__ = [
    "CATEGORIES",
    "METRICS",
    "RoutingStudy",
    "in_sample_ceiling",
    "paired_tests",
    "routing_cv",
    "scored_queries",
    "transfer",
]

METRICS = ("recall@5", "ndcg@10")
"""What every system is scored on; the first is the one routing chooses on."""
CATEGORIES = ("multi-hop", "open-domain", "temporal")
"""The categories tested one by one (the weakest on LoCoMo, the ones routing targets)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RoutingStudy:
    """Routing on a run folder.

    Attributes:
        folder: an ``eval.run`` folder holding the views' runs, ``fusion:convex`` and the
            baseline (``runs/*.trec``, ``qrels.txt``).
        data: the labelled data the folder was run on (question texts, types, groups).
        out: where the study is written.
        routing: the fusion, its space, the threshold and the classifier.
        reference: the system routing is tested against.
        baseline: the one-view system also tested against.
        transfer_from: a source run folder (LoCoMo): learn there, apply here unchanged.
        transfer_data: the source folder's labelled data.
        extra_references: more systems of the folder tested the same way (e.g. LoCoMo's
            fusion transferred, ``locomo:fusion:convex``), where the folder has them.
    """

    folder: Path
    data: Path
    out: Path
    routing: Routing = field(default_factory=Routing)
    reference: str = SYSTEM
    baseline: str = "bm25:message"
    transfer_from: Path | None = None
    transfer_data: Path | None = None
    extra_references: tuple[str, ...] = (f"locomo:{SYSTEM}",)

    def __post_init__(self) -> None:
        if (self.transfer_from is None) != (self.transfer_data is None):
            raise ValueError("transfer needs both the source run folder and its data")


@dataclass(frozen=True, slots=True)
class _Inputs:
    runs: dict[str, pl.DataFrame]
    queries: pl.DataFrame  # query_id, relevant, text, category, group: the scored queries


def scored_queries(folder: Path, data: Path) -> pl.DataFrame:
    """The folder's scored queries (``qrels.txt``) with their text, type and CV group.

    ``query_id, relevant, text, category, group``: the type is the data's ``category`` (``none``
    where it has none), the group :func:`convlab.evaluation.folds.groups`' (a conversation; a
    question with its own haystack alone).

    Raises:
        ValueError: a scored query the data does not have.
    """
    scored = relevant_by_query(read_qrels(folder / "qrels.txt"))
    loaded = load_labelled(data)
    ids = loaded.queries["query_id"].to_list()
    group = cv_folds.groups(ids, loaded.queries, haystacks=loaded.haystacks is not None)
    labelled = loaded.queries.select(
        "query_id", "text", pl.col("category").fill_null("none")
    ).with_columns(pl.Series("group", group, dtype=pl.String))
    queries = scored.join(labelled, on="query_id", how="left", maintain_order="left")
    lost = queries.filter(pl.col("text").is_null())["query_id"].to_list()
    if lost:
        raise ValueError(f"{data}: {len(lost)} queries of {folder} not in the data ({lost[0]})")
    return queries


def _inputs(folder: Path, data: Path, config: Routing) -> _Inputs:
    """The folder's runs and its scored queries (:func:`scored_queries`)."""
    runs = read_runs(folder)
    missing = [v for v in config.views if v not in runs]
    if missing:
        raise ValueError(
            f"{folder}: no run {', '.join(missing)}; the runs: {', '.join(sorted(runs))}"
        )
    return _Inputs(runs, scored_queries(folder, data))


def _scored(run: pl.DataFrame, queries: pl.DataFrame, system: str) -> pl.DataFrame:
    """``system, query_id, metric, value`` of ``run`` on every query (0 where unranked)."""
    top = run.filter(pl.col("rank") <= 10).select("query_id", "doc_id", "rank")
    got = per_query(top, queries.select("query_id", "relevant"), METRICS)
    grid = queries.select("query_id").join(pl.DataFrame({"metric": list(METRICS)}), how="cross")
    return (
        grid.join(got, on=["query_id", "metric"], how="left")
        .with_columns(pl.col("value").fill_null(0.0), pl.lit(system).alias("system"))
        .select("system", "query_id", "metric", "value")
    )


def _values(inputs: _Inputs, config: Routing) -> tuple[list[list[float]], dict[str, np.ndarray]]:
    """The weight space and, per metric, its (settings x queries) values (queries' order)."""
    space = weight_space(config)
    views = [inputs.runs[v] for v in config.views]

    def system(p: Mapping[str, Any]) -> pl.DataFrame:
        return fuse_views(views, p["weights"], config)

    qrels = inputs.queries.select("query_id", pl.col("relevant").alias("doc_id")).explode("doc_id")
    qrels = qrels.with_columns(pl.lit(1).alias("relevance"))
    res = tune(
        system,
        [{"weights": w} for w in space],
        qrels,
        config.tuning,
        groups=inputs.queries["group"].to_list(),
        report=METRICS[1:],
    )
    return space, res.values


def fuse_views(
    views: Sequence[pl.DataFrame], weights: Sequence[float], config: Routing
) -> pl.DataFrame:
    """The views fused with ``weights`` by the routing's method."""
    return fuse(list(views), list(weights), method=config.method, norm=config.norm)


def _frame(ids: Sequence[str], system: str, values: Mapping[str, np.ndarray]) -> pl.DataFrame:
    return pl.concat(
        [
            pl.DataFrame(
                {"system": system, "query_id": list(ids), "metric": m, "value": v.tolist()}
            )
            for m, v in values.items()
        ]
    )


def paired_tests(
    per_q: pl.DataFrame,
    categories: pl.DataFrame,
    against: str,
    systems: Sequence[str],
    *,
    metric: str = "recall@5",
) -> pl.DataFrame:
    """Each system against ``against``, overall and within each of :data:`CATEGORIES`.

    Paired randomization tests, Holm-adjusted over the systems overall and over (category x
    system) within categories. Returns ``subset, system, queries, against, against_mean, mean,
    delta, p, p_holm``.
    """
    wide = (
        per_q.filter(pl.col("metric") == metric)
        .pivot(on="system", index="query_id", values="value")
        .join(categories, on="query_id", how="left")
    )
    rows: list[dict[str, Any]] = []
    subsets = [("all", wide)] + [
        (c, wide.filter(pl.col("category") == c))
        for c in CATEGORIES
        if wide.filter(pl.col("category") == c).height
    ]
    for subset, part in subsets:
        base = part[against].to_numpy()
        for s in systems:
            x = part[s].to_numpy()
            rows.append(
                {
                    "subset": subset,
                    "system": s,
                    "queries": part.height,
                    "against": against,
                    "against_mean": float(base.mean()),
                    "mean": float(x.mean()),
                    "delta": float(x.mean() - base.mean()),
                    "p": paired_randomization(x, base),
                }
            )
    out = pl.DataFrame(rows)
    adjusted = []
    for overall in (True, False):
        part = out.filter((pl.col("subset") == "all") == overall)
        adjusted.append(part.with_columns(pl.Series("p_holm", holm(part["p"].to_list()))))
    return pl.concat(adjusted)


def _accuracy(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, Any]:
    frame = pl.DataFrame({"gold": list(gold), "predicted": list(predicted)})
    hit = frame.with_columns((pl.col("gold") == pl.col("predicted")).alias("hit"))
    per = hit.group_by("gold").agg(pl.col("hit").mean().alias("recall"), pl.len().alias("n"))
    confusion = frame.group_by("gold", "predicted").len().sort("gold", "predicted")
    return {
        "accuracy": float(hit["hit"].mean()),  # type: ignore[arg-type]
        "per_type_recall": {r["gold"]: r["recall"] for r in per.iter_rows(named=True)},
        "confusion": confusion.to_dicts(),
    }


def _references(inputs: _Inputs, study: RoutingStudy) -> tuple[list[pl.DataFrame], list[str]]:
    names = [study.baseline, study.reference]
    names += [n for n in study.extra_references if n in inputs.runs and n not in names]
    missing = [n for n in names[:2] if n not in inputs.runs]
    if missing:
        raise ValueError(f"{study.folder}: no run {', '.join(missing)}")
    return [_scored(inputs.runs[n], inputs.queries, n) for n in names], names


def routing_cv(study: RoutingStudy) -> dict[str, Any]:
    """Routing by grouped CV on one folder: by gold type, by predicted type, and all-type."""
    started = time.perf_counter()
    config = study.routing
    inputs = _inputs(study.folder, study.data, config)
    q = inputs.queries
    space, values = _values(inputs, config)
    metric = METRICS[0]
    groups, gold, texts = q["group"].to_list(), q["category"].to_list(), q["text"].to_list()
    t0 = time.perf_counter()
    routed = {
        "routing:gold": route_cv(values[metric], groups, gold, config),
        "routing:predicted": route_cv(
            values[metric],
            groups,
            gold,
            config,
            test_types=predicted_types(texts, gold, config.classifier),
        ),
        "cv all-type": route_cv(values[metric], groups, ["*"] * len(gold), config),
    }
    classifier_seconds = time.perf_counter() - t0
    ids = q["query_id"].to_list()
    frames, names = _references(inputs, study)
    for name, r in routed.items():
        picked = {m: v[r.settings, np.arange(len(ids))] for m, v in values.items()}
        frames.append(_frame(ids, name, picked))
    per_q = pl.concat(frames)
    cats = q.select("query_id", "category")
    mine = ["routing:gold", "routing:predicted"]  # tested; the all-type CV is a check only
    sig = pl.concat(
        [paired_tests(per_q, cats, against, mine) for against in [study.reference, study.baseline]]
    )
    choices = pl.concat(
        [r.choices.with_columns(pl.lit(n).alias("system")) for n, r in routed.items()]
    ).with_columns(
        pl.col("setting")
        .map_elements(lambda s: json.dumps(space[s]), return_dtype=pl.String)
        .alias("weights")
    )
    report = {
        "mode": "cv",
        "folder": str(study.folder),
        "data": str(study.data),
        "routing": _config(study),
        "queries": q.height,
        "classifier_heldout": _accuracy(gold, routed["routing:predicted"].routed_by),
        "classifier_cv_seconds": round(classifier_seconds, 2),
        "in_sample_ceiling": in_sample_ceiling(values[metric], gold),
        "means": _means(per_q, cats, [*names, *routed]),
        "comparisons": sig.to_dicts(),
        "choices": choices.to_dicts(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    _write(study.out, report, per_q.join(cats, on="query_id", how="left"), choices)
    return report


def transfer(study: RoutingStudy) -> dict[str, Any]:
    """Routes and classifier learned on all of the source folder, applied to this one."""
    if study.transfer_from is None or study.transfer_data is None:
        raise ValueError("transfer needs both the source run folder and its data")
    started = time.perf_counter()
    config = study.routing
    source = _inputs(study.transfer_from, study.transfer_data, config)
    space, values = _values(source, config)
    t0 = time.perf_counter()
    routes = learn_routes(
        values[METRICS[0]],
        source.queries["category"].to_list(),
        source.queries["text"].to_list(),
        space,
        config,
    )
    fit_seconds = time.perf_counter() - t0
    target = _inputs(study.folder, study.data, config)
    q = target.queries
    t0 = time.perf_counter()
    assigned = routes.assign(q["text"].to_list())
    predict_seconds = time.perf_counter() - t0
    route_of = dict(zip(q["query_id"].to_list(), assigned, strict=True))
    run = routed_run([target.runs[v] for v in config.views], route_of, routes, config)
    frames, names = _references(target, study)
    frames.append(_scored(run, q, "routing:transferred"))
    per_q = pl.concat(frames)
    cats = q.select("query_id", "category")
    against = [n for n in names if n != "routing:transferred"]
    sig = pl.concat([paired_tests(per_q, cats, a, ["routing:transferred"]) for a in against])
    routed = pl.DataFrame({"query_id": q["query_id"], "routed_by": assigned})
    report = {
        "mode": "transfer",
        "folder": str(study.folder),
        "data": str(study.data),
        "source": str(study.transfer_from),
        "routing": _config(study),
        "routes": routes.as_dict(),
        "queries": q.height,
        "routed_types": routed.group_by("routed_by").len().sort("routed_by").to_dicts(),
        "classifier_fit_seconds": round(fit_seconds, 3),
        "classify_ms_per_query": round(1000 * predict_seconds / max(q.height, 1), 4),
        "means": _means(per_q, cats, [*names, "routing:transferred"]),
        "comparisons": sig.to_dicts(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    per_q = per_q.join(cats, on="query_id", how="left").join(routed, on="query_id", how="left")
    _write(study.out, report, per_q, None)
    return report


def in_sample_ceiling(values: np.ndarray, types: Sequence[str]) -> dict[str, float]:
    """The best setting's mean over all queries, and per type, chosen on those very queries.

    NOT cross-validated: the most any weights of the space could give, a ceiling to read the
    held-out figures against, never a result.
    """
    kinds = np.asarray(types, dtype=object)
    per_type = {str(k): float(values[:, kinds == k].mean(axis=1).max()) for k in set(types)}
    routed = sum(per_type[str(k)] * float(np.mean(kinds == k)) for k in set(types))
    return {"all-type": float(values.mean(axis=1).max()), "per-type": routed} | per_type


def _config(study: RoutingStudy) -> dict[str, Any]:
    plain = asdict(study.routing)
    plain["tuning"] = study.routing.tuning.as_dict()
    return plain | {"reference": study.reference, "baseline": study.baseline}


def _means(per_q: pl.DataFrame, cats: pl.DataFrame, systems: Sequence[str]) -> list[Any]:
    joined = per_q.join(cats, on="query_id", how="left")
    overall = joined.group_by("system", "metric").agg(pl.col("value").mean().alias("mean"))
    by_cat = joined.group_by("system", "metric", "category").agg(
        pl.col("value").mean().alias("mean"), pl.len().alias("queries")
    )
    rows = overall.with_columns(pl.lit("all").alias("category")).join(
        joined.group_by("system", "metric").len("queries"), on=["system", "metric"]
    )
    both = pl.concat([rows.select(by_cat.columns), by_cat])
    order = {s: i for i, s in enumerate(systems)}
    return both.sort(
        pl.col("system").replace_strict(order, default=len(order)), "metric", "category"
    ).to_dicts()


def _write(
    out: Path, report: dict[str, Any], per_q: pl.DataFrame, choices: pl.DataFrame | None
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=1, default=str)
    write_file_atomic(out / "routing.json", lambda t: t.write_text(text))
    write_file_atomic(out / "per_query.parquet", lambda t: per_q.write_parquet(t))
    if choices is not None:
        write_file_atomic(out / "choices.parquet", lambda t: choices.write_parquet(t))
    md = markdown(report)
    write_file_atomic(out / "routing.md", lambda t: t.write_text(md))


def markdown(report: dict[str, Any], measure: str = "R@5") -> str:
    """The report's tests as a Markdown table (one row per subset, system and reference)."""
    head = f"| subset | system | vs | queries | {measure} vs | {measure} | delta | p | p (Holm) |"
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for r in report["comparisons"]:
        lines.append(
            f"| {r['subset']} | {r['system']} | {r['against']} | {r['queries']} | "
            f"{r['against_mean']:.3f} | {r['mean']:.3f} | {r['delta']:+.3f} | {r['p']:.4f} | "
            f"{r['p_holm']:.4f} |"
        )
    if "classifier_heldout" in report:
        lines.append("")
        accuracy = report["classifier_heldout"]["accuracy"]
        lines.append(f"classifier held-out accuracy: {accuracy:.3f}")
    return "\n".join(lines) + "\n"
