"""Fusion study over a run folder (the library of ``python -m eval.fuse_runs``).

:func:`study` (a :class:`FusionStudy`) reads the run folder's TREC runs (``runs/*.trec``),
``qrels.txt``, the query categories (``per_query.parquet``) and the system names
(``config.json``), then scores:

- every single run (Recall@5, nDCG@10; no tuning);
- two *reference* fusions with fixed weights (orientation figures, chosen by hand on
  these very queries: NOT cross-validated, reported only to reproduce them);
- for each combination of runs and each fusion method, the weights (and RRF's k) chosen by
  grouped cross-validation by conversation (:func:`convlab.evaluation.tune.tune`): chosen on the
  training folds, reported on the held-out folds only (CROSS-VALIDATED);
- paired randomization tests of everything against the baseline (``bm25:message``), Holm-adjusted
  over all systems of a metric (:func:`convlab.evaluation.significance.compare`);
- Recall@5 per category.

``lexical_units`` (a LoCoMo json) first builds BM25 runs over other strategies' units
(``bm25:sequential``, ``bm25:turn_pair``, ``bm25:whole_turn``: no model, only the tokenizer;
scored per message like every other system), saves them as TREC runs under ``DIR/runs`` and adds
them to the study. Writes ``DIR/fusion.json``, ``DIR/fusion.md``, ``DIR/choices.parquet`` (the
setting chosen per fold) and ``DIR/per_query.parquet`` (the held-out per-query values).
:func:`fixed` (a :class:`FixedFusion`) scores one fusion with settings chosen elsewhere.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from convlab.atomic import write_file_atomic
from convlab.evaluation import folds as cv_folds
from convlab.evaluation.metrics import per_query
from convlab.evaluation.queries import read_qrels, relevant_by_query
from convlab.evaluation.run_files import lexical_runs, read_runs
from convlab.evaluation.significance import compare
from convlab.evaluation.tune import cross_validate, random_space, tune
from convlab.fusion import fuse
from convlab.studies.contract import STUDIES, Study, StudyResult, source_record, write_study
from convlab.systems.system import Tuning

METRICS = ("recall@5", "ndcg@10")
"""What every system of the study is scored on; the first is tuned on."""
Method = tuple[str, str, Mapping[str, Any], Mapping[str, Sequence[Any]]]
"""A fusion method of the study: label, registered method, fixed params, tuned params."""
Reference = tuple[str, str, Sequence[float], Mapping[str, Any]]
"""A reference fusion: label, method, the weights of the reference runs, params."""


def _fused_system(
    runs: Mapping[str, pl.DataFrame],
    combo: Sequence[str],
    method: str,
    fixed: Mapping[str, Any],
) -> Callable[[Mapping[str, Any]], pl.DataFrame]:
    """The run of ``combo`` fused by ``method`` for a setting (``w:<run>`` weights + params)."""

    def system(p: Mapping[str, Any]) -> pl.DataFrame:
        weights = [1.0] + [p[f"w:{n}"] for n in combo[1:]]
        extra = {k: v for k, v in p.items() if not k.startswith("w:")}
        return fuse([runs[n] for n in combo], weights, method=method, **fixed, **extra)

    return system


@dataclass(frozen=True, slots=True, kw_only=True)
class FusionStudy:
    """A fusion study of a run folder (:func:`study`, :func:`run`).

    Attributes:
        folder: an ``eval.run`` folder (``runs/*.trec``, ``qrels.txt``, ``per_query.parquet``).
        baseline: the run everything is tested against.
        methods: the fusion methods (:data:`Method`), each tried on every combination (its
            tuned params join the grid).
        tuning: how every fusion's settings are chosen (the systems' one tuning config): each
            run's weight grid after the first (which keeps weight 1), settings drawn, the metric
            chosen on (the first of :data:`METRICS`), folds, seed.
        combos: the combinations of runs fused (the first run first).
        lexical_combos: more combinations, fused where the folder (or ``lexical_units``) has
            all of their runs.
        references: fusions with fixed weights of ``reference_runs`` (not cross-validated).
        reference_runs: the runs the references fuse.
        lexical_strategies: the strategies of BM25 runs made with ``lexical_units``.
        lexical_units: a LoCoMo json: BM25 runs over other strategies' units join the study.
    """

    study: ClassVar[str] = "fusion"
    folder: Path
    baseline: str
    methods: Sequence[Method]
    tuning: Tuning
    combos: Sequence[Sequence[str]]
    lexical_combos: Sequence[Sequence[str]] = ()
    references: Sequence[Reference] = ()
    reference_runs: Sequence[str] = ()
    lexical_strategies: Sequence[str] = ()
    lexical_units: Path | None = None

    def __post_init__(self) -> None:
        if not self.methods or not self.combos:
            raise ValueError("a fusion study needs methods and combinations")


@dataclass(frozen=True, slots=True, kw_only=True)
class FixedFusion:
    """One fusion with settings chosen elsewhere, scored on a run folder (:func:`fixed`).

    Attributes:
        folder: an ``eval.run`` folder.
        weights: run name -> weight, in order (:func:`parse_fixed`).
        baseline: the run it is tested against.
        method: the fusion method (:data:`convlab.fusion.FUSIONS`).
        norm: its score normalisation.
        lexical_units: as :attr:`FusionStudy.lexical_units`.
        lexical_strategies: as :attr:`FusionStudy.lexical_strategies`.
    """

    study: ClassVar[str] = "fusion-fixed"
    folder: Path
    weights: Mapping[str, float]
    baseline: str
    method: str = "convex"
    norm: str = "z-score"
    lexical_units: Path | None = None
    lexical_strategies: Sequence[str] = ()

    def __post_init__(self) -> None:
        if not self.weights:
            raise ValueError("a fixed fusion needs one or more RUN=WEIGHT")


def _inputs(
    folder: Path, out: Path, lexical_units: Path | None, lexical_strategies: Sequence[str] = ()
) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """The folder's runs (plus BM25 over units with ``lexical_units``) and its qrels."""
    runs = read_runs(folder)
    if lexical_units is not None:
        runs.update(lexical_runs(lexical_units, out, lexical_strategies, METRICS))
    return runs, read_qrels(folder / "qrels.txt")


def _categories(folder: Path) -> pl.DataFrame:
    """``query_id, category`` of a run folder's queries (its ``per_query.parquet``)."""
    pq = pl.read_parquet(folder / "per_query.parquet", glob=False)
    return pq.select("query_id", "category").unique("query_id")


def parse_fixed(spec: str) -> dict[str, float]:
    """``"a=1,b=0.5"`` -> ``{"a": 1.0, "b": 0.5}``, in order.

    Raises:
        ValueError: an item without ``=`` or with a weight that is not a number.
    """
    out: dict[str, float] = {}
    for item in (s.strip() for s in spec.split(",") if s.strip()):
        name, sep, weight = item.rpartition("=")
        if not sep or not name:
            raise ValueError(f"--fixed item {item!r} is not RUN=WEIGHT")
        out[name] = float(weight)
    return out


def fixed(config: FixedFusion, out: Path) -> dict[str, Any]:
    """Score one fusion with settings chosen elsewhere, against its baseline; write it.

    Nothing is tuned on this folder's queries: the figures hold for data the settings never saw.
    Writes ``fixed.json``, ``fixed.md`` and ``per_query.parquet`` (the baseline, each run and
    the fusion, per query: the lever table's input) under ``out``.

    Raises:
        ValueError: a run the folder (or ``lexical_units``) does not have, naming those it has.
    """
    weights = dict(config.weights)
    baseline = config.baseline
    runs, qrels = _inputs(config.folder, out, config.lexical_units, config.lexical_strategies)
    queries = relevant_by_query(qrels)
    missing = [n for n in weights if n not in runs]
    if missing:
        raise ValueError(f"no run {', '.join(missing)}; the runs: {', '.join(sorted(runs))}")
    fused = fuse(
        [runs[n] for n in weights], list(weights.values()), method=config.method, norm=config.norm
    )
    name = f"fixed {config.method}({config.norm}) " + "+".join(
        f"{n}*{w:g}" for n, w in weights.items()
    )
    per_q = pl.concat(
        [
            _scored(runs[baseline], queries, baseline),
            *[_scored(runs[n], queries, n) for n in weights if n != baseline],
            _scored(fused, queries, name),
        ]
    ).select("system", "query_id", "metric", "value")
    sig = compare(per_q, baseline)
    if (config.folder / "per_query.parquet").is_file():  # for per-category figures
        per_q = per_q.join(_categories(config.folder), on="query_id", how="left")
    report = {
        "folder": str(config.folder),
        "baseline": baseline,
        "weights": weights,
        "method": config.method,
        "norm": config.norm,
        "queries": queries.height,
        "significance": sig.to_dicts(),
    }
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=1, default=str)
    write_file_atomic(out / "fixed.json", lambda t: t.write_text(text))
    write_file_atomic(out / "per_query.parquet", lambda t: per_q.write_parquet(t))
    rows = ["| system | recall@5 | vs baseline | p (Holm) | ndcg@10 |", "|---|---|---|---|---|"]
    for r in sig.pivot(on="metric", index="system", values=["mean", "delta", "p_holm"]).iter_rows(
        named=True
    ):
        rows.append(
            f"| {r['system']} | {r['mean_recall@5']:.3f} | {r['delta_recall@5']:+.3f} | "
            f"{r['p_holm_recall@5']:.4f} | {r['mean_ndcg@10']:.3f} |"
        )
    md = "\n".join(rows) + "\n"
    write_file_atomic(out / "fixed.md", lambda t: t.write_text(md))
    return report


def _scored(run: pl.DataFrame, queries: pl.DataFrame, system: str) -> pl.DataFrame:
    top = run.filter(pl.col("rank") <= max(int(m.split("@")[1]) for m in METRICS))
    return per_query(top, queries, METRICS).with_columns(pl.lit(system).alias("system"))


def _space(
    names: Sequence[str],
    tuned: Mapping[str, Sequence[Any]],
    config: FusionStudy,
) -> list[dict[str, Any]]:
    grid_space: dict[str, list[Any]] = {f"w:{n}": list(config.tuning.weights) for n in names[1:]}
    grid_space.update({k: list(v) for k, v in tuned.items()})
    samples, seed = config.tuning.samples, config.tuning.seed
    space = random_space(grid_space, samples, seed=seed)
    # drop settings where every other run is off and nothing but the first run is left:
    return [p for p in space if any(p[f"w:{n}"] > 0 for n in names[1:])] or space


Row = dict[str, Any]


def _references(
    runs: Mapping[str, pl.DataFrame], queries: pl.DataFrame, config: FusionStudy
) -> tuple[list[pl.DataFrame], list[Row]]:
    """The reference fusions (weights chosen by hand, on these very queries: not CV)."""
    ref = [runs[n] for n in config.reference_runs]
    pq, rows = [], []
    for label, method, weights, params in config.references:
        fused = fuse(ref, list(weights), method=method, **params)
        pq.append(_scored(fused, queries, label))
        rows.append({"system": label, "kind": "reference", "cv": False, "params": str(params)})
    return pq, rows


def _tuned(
    runs: Mapping[str, pl.DataFrame],
    qrels: pl.DataFrame,
    config: FusionStudy,
    tuning: Tuning,
    log: Callable[[str], None],
) -> tuple[list[tuple[str, Any, Any]], list[Row]]:
    """Each combination fused by each method, its settings chosen by cross-validation."""
    combos = [*config.combos, *(c for c in config.lexical_combos if all(n in runs for n in c))]
    tunes: list[tuple[str, Any, Any]] = []
    rows: list[Row] = []
    for combo in combos:
        for label, method, fixed_params, tuned in config.methods:
            system_name = f"cv {label} " + "+".join(combo)
            space = _space(combo, tuned, config)
            system = _fused_system(runs, combo, method, fixed_params)
            t0 = time.perf_counter()
            res = tune(system, space, qrels, tuning, report=("ndcg@10",))
            log(
                f"{system_name}: {len(space)} settings, CV recall@5 {res.mean:.4f} "
                f"({time.perf_counter() - t0:.0f} s)"
            )
            tunes.append((system_name, res, space))
            best_in_sample = res.scores.sort("mean", descending=True).row(0, named=True)
            rows.append(
                {
                    "system": system_name,
                    "kind": "fusion",
                    "cv": True,
                    "params": f"{len(space)} settings; best in-sample (not CV) "
                    f"{best_in_sample['mean']:.4f} {best_in_sample['params']}",
                }
            )
    return tunes, rows


def _nested(
    tunes: list[tuple[str, Any, Any]], tuning: Tuning, log: Callable[[str], None]
) -> tuple[str, Any, Row]:
    """The combination, the method and the weights chosen per fold, among all of ``tunes``."""
    name = "cv nested: combination, method and weights chosen per fold"
    nested_space = [{"system": s, **p} for s, _, space in tunes for p in space]
    first = tunes[0][1].per_query.filter(pl.col("metric") == tuning.metric)
    res = cross_validate(
        nested_space,
        {m: np.vstack([r.values[m] for _, r, _ in tunes]) for m in tunes[0][1].values},
        first["query_id"].to_list(),
        first["group"].to_list(),
        tuning,
    )
    log(f"{name}: {len(nested_space)} settings, CV recall@5 {res.mean:.4f}")
    row = {"system": name, "kind": "fusion", "cv": True, "params": f"{len(nested_space)} settings"}
    return name, res, row


def study(
    config: FusionStudy, out: Path, *, log: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Score single runs, reference fusions and cross-validated fusions; write the report.

    Args:
        config: the run folder, the study's design and its tuning.
        out: where the study is written.
        log: called with one line per tuned system (its cross-validated recall@5 and time).
    """
    say = log or (lambda line: None)
    started = time.perf_counter()
    runs, qrels = _inputs(config.folder, out, config.lexical_units, config.lexical_strategies)
    queries = relevant_by_query(qrels)
    cats = _categories(config.folder)
    pq = [_scored(run, queries, name) for name, run in runs.items()]
    rows: list[Row] = [{"system": n, "kind": "single", "cv": False, "params": ""} for n in runs]
    ref_pq, ref_rows = _references(runs, queries, config)
    pq += ref_pq
    rows += ref_rows
    tuning = config.tuning
    tunes, tuned_rows = _tuned(runs, qrels, config, tuning, say)
    rows += tuned_rows
    choices = [r.choices.with_columns(pl.lit(n).alias("system")) for n, r, _ in tunes]
    pq += [r.per_query.with_columns(pl.lit(n).alias("system")) for n, r, _ in tunes]
    if len(tunes) > 1:
        name, res, row = _nested(tunes, tuning, say)
        choices.append(res.choices.with_columns(pl.lit(name).alias("system")))
        pq.append(res.per_query.with_columns(pl.lit(name).alias("system")))
        rows.append(row)
    per_q = pl.concat([p.select("system", "query_id", "metric", "value") for p in pq])
    sig = compare(per_q, config.baseline)
    by_cat = (
        per_q.filter(pl.col("metric") == "recall@5")
        .join(cats, on="query_id", how="left")
        .group_by("system", "category", maintain_order=True)
        .agg(pl.col("value").mean().alias("mean"), pl.len().alias("queries"))
    )
    out.mkdir(parents=True, exist_ok=True)
    write_file_atomic(out / "choices.parquet", lambda t: pl.concat(choices).write_parquet(t))
    write_file_atomic(out / "per_query.parquet", lambda t: per_q.write_parquet(t))
    table = pl.DataFrame(rows).join(
        sig.pivot(on="metric", index="system", values=["mean", "delta", "p_holm"]),
        on="system",
        how="left",
    )
    report = {
        "folder": str(config.folder),
        "baseline": config.baseline,
        "folds": tuning.folds,
        "tuned_on": tuning.metric,
        "weights_grid": list(tuning.weights),
        "samples": tuning.samples,
        "seed": tuning.seed,
        "queries": queries.height,
        "seconds": round(time.perf_counter() - started, 1),
        "systems": table.to_dicts(),
        "significance": sig.to_dicts(),
        "by_category": by_cat.to_dicts(),
    }
    text = json.dumps(report, indent=1, default=str)
    write_file_atomic(out / "fusion.json", lambda t: t.write_text(text))
    md = _markdown(table, by_cat)
    write_file_atomic(out / "fusion.md", lambda t: t.write_text(md))
    return report


def _markdown(table: pl.DataFrame, by_cat: pl.DataFrame) -> str:
    cats = sorted(c for c in by_cat["category"].unique().to_list() if c is not None)
    wide = by_cat.pivot(on="category", index="system", values="mean")
    t = table.join(wide, on="system", how="left").sort("mean_recall@5", descending=True)
    head = ["system", "CV", "Recall@5", "Δ vs bm25", "p (Holm)", "nDCG@10", *cats]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in t.iter_rows(named=True):
        cells = [
            r["system"],
            "yes" if r["cv"] else "no",
            f"{r['mean_recall@5']:.3f}",
            f"{r['delta_recall@5']:+.3f}",
            f"{r['p_holm_recall@5']:.4f}",
            f"{r['mean_ndcg@10']:.3f}",
            *[f"{r[c]:.3f}" if r.get(c) is not None else "" for c in cats],
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def run(
    config: FusionStudy,
    out: Path,
    *,
    command: Sequence[str] = (),
    log: Callable[[str], None] | None = None,
) -> StudyResult:
    """The fusion study as a standard run folder: :func:`study`'s files and the contract's.

    ``groups.parquet`` and ``config.json``'s ``groups``: the folds every tuned fusion shares.
    """
    report = study(config, out, log=log)
    qrels = read_qrels(config.folder / "qrels.txt")
    ids = relevant_by_query(qrels)["query_id"].to_list()  # the queries tune() splits, in order
    split = cv_folds.fold_frame(ids, cv_folds.groups(ids, qrels), config.tuning.folds)
    groups = cv_folds.save(out, split)
    page = f"# Fusion study of `{config.folder}`\n\n" + (out / "fusion.md").read_text()
    return write_study(
        out,
        config,
        metrics={k: report[k] for k in ("baseline", "queries", "tuned_on", "systems")},
        report=page,
        command=command,
        data=source_record(config.folder),
        extra={"baseline": config.baseline, "seconds": report["seconds"], "groups": groups},
    )


def run_fixed(config: FixedFusion, out: Path, *, command: Sequence[str] = ()) -> StudyResult:
    """One fixed fusion as a standard run folder: :func:`fixed`'s files and the contract's."""
    report = fixed(config, out)
    page = f"# Fixed fusion on `{config.folder}`\n\n" + (out / "fixed.md").read_text()
    return write_study(
        out,
        config,
        metrics={k: report[k] for k in ("baseline", "queries", "significance")},
        report=page,
        command=command,
        data=source_record(config.folder),
        extra={"baseline": config.baseline},
    )


STUDIES.add("fusion", Study("fusion", FusionStudy, run, "eval.fuse_runs"))
STUDIES.add("fusion-fixed", Study("fusion-fixed", FixedFusion, run_fixed, "eval.fuse_runs"))
