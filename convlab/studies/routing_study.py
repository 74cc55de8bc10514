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
from typing import Any, ClassVar

import numpy as np
import polars as pl

from convlab.atomic import write_file_atomic, write_text_atomic
from convlab.defaults import SYSTEM
from convlab.evaluation import folds as cv_folds
from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.metrics import per_query
from convlab.evaluation.queries import read_qrels, relevant_by_query
from convlab.evaluation.run_files import read_runs
from convlab.evaluation.tune import tune
from convlab.fusion import fuse
from convlab.studies.contract import STUDIES, Study, StudyResult, source_record, write_study
from convlab.studies.policy_routing import policy_routing
from convlab.studies.routing import (
    Routing,
    learn_routes,
    predicted_types,
    route_cv,
    routed_run,
    weight_space,
)
from convlab.studies.routing_report import accuracy, markdown, means, paired_tests

__all__ = [
    "METRICS",
    "RoutingStudy",
    "in_sample_ceiling",
    "resurrection",
    "routing_cv",
    "run",
    "scored_queries",
    "transfer",
]

METRICS = ("recall@5", "ndcg@10")
"""What every system is scored on; the first is the one routing chooses on."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RoutingStudy:
    """Routing on a run folder.

    Attributes:
        folder: an ``eval.run`` folder holding the views' runs, ``fusion:convex`` and the
            baseline (``runs/*.trec``, ``qrels.txt``).
        data: the labelled data the folder was run on (question texts, types, groups).
        routing: the fusion, its space, the threshold and the classifier.
        reference: the system routing is tested against.
        baseline: the one-view system also tested against.
        transfer_from: a source run folder (LoCoMo): learn there, apply here unchanged.
        transfer_data: the source folder's labelled data.
        extra_references: more systems of the folder tested the same way (e.g. LoCoMo's
            fusion transferred, ``locomo:fusion:convex``), where the folder has them.
        resurrection: budgets at which the resurrection cell is routed per type too
            (:func:`resurrection`: the folder's ``policy_budgets.parquet``).
        resurrection_only: route the resurrection cell only.
    """

    study: ClassVar[str] = "routing"
    folder: Path
    data: Path
    routing: Routing = field(default_factory=Routing)
    reference: str = SYSTEM
    baseline: str = "bm25:message"
    transfer_from: Path | None = None
    transfer_data: Path | None = None
    extra_references: tuple[str, ...] = (f"locomo:{SYSTEM}",)
    resurrection: tuple[int, ...] = ()
    resurrection_only: bool = False

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


def _references(inputs: _Inputs, study: RoutingStudy) -> tuple[list[pl.DataFrame], list[str]]:
    names = [study.baseline, study.reference]
    names += [n for n in study.extra_references if n in inputs.runs and n not in names]
    missing = [n for n in names[:2] if n not in inputs.runs]
    if missing:
        raise ValueError(f"{study.folder}: no run {', '.join(missing)}")
    return [_scored(inputs.runs[n], inputs.queries, n) for n in names], names


def routing_cv(study: RoutingStudy, out: Path) -> dict[str, Any]:
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
        "classifier_heldout": accuracy(gold, routed["routing:predicted"].routed_by),
        "classifier_cv_seconds": round(classifier_seconds, 2),
        "in_sample_ceiling": in_sample_ceiling(values[metric], gold),
        "means": means(per_q, cats, [*names, *routed]),
        "comparisons": sig.to_dicts(),
        "choices": choices.to_dicts(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    _write(out, report, per_q.join(cats, on="query_id", how="left"), choices)
    return report


def transfer(study: RoutingStudy, out: Path) -> dict[str, Any]:
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
        "means": means(per_q, cats, [*names, "routing:transferred"]),
        "comparisons": sig.to_dicts(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    per_q = per_q.join(cats, on="query_id", how="left").join(routed, on="query_id", how="left")
    _write(out, report, per_q, None)
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


def resurrection(study: RoutingStudy, out: Path) -> dict[str, Any]:
    """The resurrection cell routed per type at each budget (``policy_routing.json``, ``.md``).

    :func:`convlab.studies.policy_routing.policy_routing` on the folder's
    ``policy_budgets.parquet``, one entry per budget of ``study.resurrection``.
    """
    grid = pl.read_parquet(study.folder / "policy_budgets.parquet", glob=False)
    queries = scored_queries(study.folder, study.data)
    found = {
        str(b): policy_routing(grid, queries, study.routing, budget=b) for b in study.resurrection
    }
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "policy_routing.json", json.dumps(found, indent=1, default=str))
    text = "".join(
        f"## {b} tokens (coverage)\n\n"
        + markdown({"comparisons": r["comparisons"]}, "coverage")
        + "\n"
        for b, r in found.items()
    )
    write_text_atomic(out / "policy_routing.md", text)
    return {"budgets": found, "markdown": text}


def _groups(study: RoutingStudy, out: Path, *, grid: bool) -> dict[str, Any]:
    """Write the CV's groups and folds (``groups.parquet``) of the folder's scored queries.

    ``grid``: those the resurrection routing scores at its first budget (a coverage in every
    cell) instead, when it is the only cross-validation run.
    """
    q = scored_queries(study.folder, study.data)
    if grid:
        at = pl.read_parquet(study.folder / "policy_budgets.parquet", glob=False).filter(
            pl.col("budget") == study.resurrection[0]
        )
        ok = at.group_by("query_id").agg(pl.col("coverage").is_not_null().all().alias("ok"))
        q = q.join(ok.filter("ok"), on="query_id", how="semi", maintain_order="left")
    ids, group = q["query_id"].to_list(), q["group"].to_list()
    haystacks = ids == group  # each question its own group: its own haystack
    split = cv_folds.fold_frame(ids, group, study.routing.tuning.folds)
    return cv_folds.save(out, split, haystacks=haystacks)


def run(config: RoutingStudy, out: Path, *, command: Sequence[str] = ()) -> StudyResult:
    """Routing (by CV, or transferred) and the resurrection routing, as a standard run folder.

    :func:`routing_cv` (or :func:`transfer`) and, with ``config.resurrection``,
    :func:`resurrection`; ``report.md`` holds their tables, ``metrics.json`` the means and the
    tests, ``groups.parquet`` the folds of the cross-validation (none when transfer alone).
    """
    pages, metrics, extra = [], {}, {}
    if config.resurrection:
        found = resurrection(config, out)
        pages.append(f"# Resurrection cell routed per type\n\n{found['markdown']}")
        metrics["resurrection"] = found["budgets"]
    report: dict[str, Any] | None = None
    if not config.resurrection_only:
        cv = config.transfer_from is None
        report = routing_cv(config, out) if cv else transfer(config, out)
        pages.insert(0, f"# Routing ({report['mode']})\n\n" + markdown(report))
        metrics |= {k: report[k] for k in ("mode", "queries", "means", "comparisons")}
        extra["seconds"] = report["seconds"]
    if report is not None and report["mode"] == "cv":
        extra["groups"] = _groups(config, out, grid=False)
    elif config.resurrection:
        extra["groups"] = _groups(config, out, grid=True)
    read = [config.folder] + ([config.transfer_from] if config.transfer_from else [])
    return write_study(
        out,
        config,
        metrics=metrics,
        report="\n".join(pages),
        command=command,
        data=source_record(*read) | {"labelled": str(config.data)},
        extra=extra,
    )


STUDIES.add("routing", Study("routing", RoutingStudy, run, "eval.routing"))
