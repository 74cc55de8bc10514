"""The search confidence fitted and judged by grouped cross-validation, and its transfer.

:mod:`convlab.systems.confidence` reads a query's hits and says how likely the query has an
answer in what was searched. This module makes its data and judges it:

- :func:`study_frame`: every query of a labelled data set searched with a system (the default
  fusion), its :data:`~convlab.systems.confidence.FEATURES`, whether it has no answer
  (:func:`no_answer`: LongMemEval's abstention questions, ``_abs``; LoCoMo's adversarial
  category; judged no-answer queries of a pooled set, category ``no-answer``), and its
  cross-validation group (:func:`convlab.evaluation.folds.groups`, prefixed by the data set);
- :func:`cross_validated`: each query's confidence from a model fitted on the other folds
  (:mod:`convlab.evaluation.folds`: no group is both fitted on and judged), with the fold's
  threshold chosen on its training queries only (:func:`threshold_for`);
- :func:`transfer`: fitted on one data set, judged on each other;
- :func:`summarise`: per data set, AUROC (answerable against no-answer queries) and the
  operating point: the share of answerable queries kept and of no-answer queries flagged;
- :func:`fit_model`: the model fitted on every query, as shipped;
- :func:`run` (a :class:`ConfidenceStudy`): all of it as a standard run folder
  (:mod:`convlab.studies.contract`), behind ``python -m eval.confidence``.

The model is a logistic regression over standardised features (scikit-learn), calibrated in
the sense that its output is a fitted probability; the threshold keeps ``keep`` (0.95) of the
answerable training queries.
"""

from __future__ import annotations

import json
import math
import shlex
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec
import numpy as np
import polars as pl

from convlab.atomic import write_file_atomic, write_text_atomic
from convlab.evaluation import folds as cv_folds
from convlab.evaluation.datasets import LabelledData
from convlab.evaluation.provenance import source_commit
from convlab.studies.confidence_page import page
from convlab.studies.contract import STUDIES, Study, StudyResult, write_study
from convlab.systems.confidence import FEATURES, MODEL_FILE, ConfidenceModel, features_frame
from convlab.systems.hits import DEPTH
from convlab.systems.system import System

if TYPE_CHECKING:
    from convlab.protocols import Embedder

__all__ = [
    "ConfidenceConfig",
    "ConfidenceStudy",
    "cross_validated",
    "fit_model",
    "no_answer",
    "run",
    "study_frame",
    "summarise",
    "threshold_for",
    "transfer",
]

NO_ANSWER_CATEGORIES = ("adversarial", "no-answer")
"""Query categories that have no answer in the data: LoCoMo's 5th, and judged no-answer ones."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfidenceConfig:
    """How the confidence is fitted and judged.

    Attributes:
        folds: folds of the grouped cross-validation (fewer when there are fewer groups).
        keep: the share of answerable training queries the default threshold keeps.
        c: the logistic regression's inverse regularisation strength.
    """

    folds: int = 5
    keep: float = 0.95
    c: float = 1.0

    def __post_init__(self) -> None:
        if self.folds < 2:
            raise ValueError(f"folds is {self.folds}; cross-validation needs at least 2")
        if not 0.0 < self.keep < 1.0:
            raise ValueError(f"keep is {self.keep}; it must be between 0 and 1")
        if self.c <= 0:
            raise ValueError(f"c is {self.c}; it must be positive")


def no_answer(queries: pl.DataFrame) -> pl.Series:
    """Whether each query has no answer in its data (see the module docstring)."""
    abstains = queries["query_id"].str.ends_with("_abs")
    if "category" in queries.columns:
        abstains = abstains | queries["category"].is_in(NO_ANSWER_CATEGORIES).fill_null(False)
    return abstains.alias("no_answer")


def study_frame(
    data: LabelledData, system: System, *, embedder: Embedder, depth: int = DEPTH
) -> pl.DataFrame:
    """``dataset, query_id, group, no_answer, answered`` and the features of every query.

    The queries are searched with ``system`` as :func:`convlab.evaluation.evaluate.evaluate`
    searches them (in their haystack when they have one, else in their conversation, or the
    whole corpus for a query of none). ``answered``: a relevant doc is in the top 5.
    """
    from convlab.evaluation.config import EvalConfig
    from convlab.evaluation.evaluate import evaluate

    scope = "haystack" if data.haystacks is not None else "conversation"
    config = EvalConfig(metrics=("recall@5",), budgets=(256,), depth=depth, scope=scope)
    ev = evaluate(data, [system], embedder=embedder, config=config, progress=False)
    hits = ev.hits[system.name]
    queries = data.queries
    frame = features_frame(hits, dict(queries.select("query_id", "text").iter_rows()))
    top5 = (
        hits.filter(pl.col("rank") <= 5)
        .join(
            queries.select("query_id", pl.col("relevant").alias("doc_id")).explode("doc_id"),
            on=["query_id", "doc_id"],
        )["query_id"]
        .unique()
    )
    return pl.DataFrame(
        {
            "dataset": [data.name] * queries.height,
            "query_id": queries["query_id"],
            "group": [
                f"{data.name}/{g}"
                for g in cv_folds.groups(
                    queries["query_id"].to_list(), queries, haystacks=data.haystacks is not None
                )
            ],
            "no_answer": no_answer(queries),
            "answered": queries["query_id"].is_in(top5.implode()),
        }
    ).join(frame, on="query_id", how="left", maintain_order="left")


def _xy(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    return frame.select(FEATURES).to_numpy(), (~frame["no_answer"]).to_numpy().astype(int)


def _fit(frame: pl.DataFrame, config: ConfidenceConfig) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = _xy(frame)
    if len(set(y.tolist())) < 2:
        raise ValueError("fitting the confidence needs answerable and no-answer queries")
    return make_pipeline(StandardScaler(), LogisticRegression(C=config.c)).fit(x, y)


def threshold_for(confidences: np.ndarray, answerable: np.ndarray, keep: float) -> float:
    """The highest threshold that keeps at least ``keep`` of the answerable queries.

    A query is kept when its confidence is at least the threshold.

    Example:
        >>> threshold_for(np.array([0.1, 0.5, 0.6, 0.9, 0.2]),
        ...               np.array([True, True, True, True, False]), 0.75)
        0.5
    """
    kept = np.sort(confidences[answerable])
    if kept.size == 0:
        raise ValueError("no answerable query to keep")
    drop = int(np.floor((1.0 - keep) * kept.size + 1e-9))
    return float(kept[drop])


def _predict(model: Any, frame: pl.DataFrame) -> np.ndarray:
    return np.asarray(model.predict_proba(_xy(frame)[0])[:, 1])


def cross_validated(frame: pl.DataFrame, config: ConfidenceConfig) -> pl.DataFrame:
    """``frame`` with each query's held-out ``confidence``, its fold and the fold's threshold.

    Folds are groups (:func:`convlab.evaluation.folds.splits`, stratified by ``no_answer``);
    each fold's model and threshold see its training queries only.

    Raises:
        ValueError: fewer than 2 groups.
    """
    # stratified: no-answer queries are few, and a training fold needs some of them
    splits = cv_folds.splits(
        frame["group"].to_list(), config.folds, labels=frame["no_answer"].to_list()
    )
    conf = np.zeros(frame.height)
    fold_of = np.zeros(frame.height, dtype=np.int64)
    cut = np.zeros(frame.height)
    for fold, (train, test) in enumerate(splits):
        part = frame[train.tolist()]
        model = _fit(part, config)
        conf[test] = _predict(model, frame[test.tolist()])
        cut[test] = threshold_for(_predict(model, part), ~part["no_answer"].to_numpy(), config.keep)
        fold_of[test] = fold
    return frame.with_columns(
        pl.Series("confidence", conf), pl.Series("fold", fold_of), pl.Series("threshold", cut)
    )


def transfer(frame: pl.DataFrame, config: ConfidenceConfig) -> pl.DataFrame:
    """Fitted on one data set (threshold there), judged on another: every ordered pair.

    Returns:
        :func:`summarise`'s columns with ``fitted_on``; a data set judged against itself is
        left out (that is :func:`cross_validated`'s figure).
    """
    rows = []
    names = frame["dataset"].unique(maintain_order=True).to_list()
    for source in names:
        train = frame.filter(pl.col("dataset") == source)
        if train["no_answer"].n_unique() < 2:
            continue
        model = _fit(train, config)
        cut = threshold_for(_predict(model, train), ~train["no_answer"].to_numpy(), config.keep)
        for target in names:
            if target == source:
                continue
            test = frame.filter(pl.col("dataset") == target)
            judged = test.with_columns(
                pl.Series("confidence", _predict(model, test)), pl.lit(cut).alias("threshold")
            )
            rows.append(summarise(judged).with_columns(pl.lit(source).alias("fitted_on")))
    return pl.concat(rows) if rows else pl.DataFrame()


def summarise(judged: pl.DataFrame) -> pl.DataFrame:
    """Per data set: queries, no-answer queries, AUROC, kept and flagged at the threshold.

    ``judged`` holds ``dataset, no_answer, confidence, threshold``. AUROC is the probability
    that an answerable query gets a higher confidence than a no-answer one (ties count half;
    None without both kinds); ``kept`` is the share of answerable queries at or above their
    threshold, ``flagged`` the share of no-answer queries below it.
    """
    from sklearn.metrics import roc_auc_score

    rows = []
    for (name,), part in judged.group_by("dataset", maintain_order=True):
        na = part["no_answer"].to_numpy()
        conf = part["confidence"].to_numpy()
        above = conf >= part["threshold"].to_numpy()
        both = 0 < na.sum() < na.size
        rows.append(
            {
                "dataset": name,
                "queries": int(na.size),
                "no_answer": int(na.sum()),
                "auroc": float(roc_auc_score(~na, conf)) if both else None,
                "kept": float(above[~na].mean()) if (~na).any() else None,
                "flagged": float((~above[na]).mean()) if na.any() else None,
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "dataset": pl.String,
            "queries": pl.Int64,
            "no_answer": pl.Int64,
            "auroc": pl.Float64,
            "kept": pl.Float64,
            "flagged": pl.Float64,
        },
    )


def fit_model(
    frame: pl.DataFrame, config: ConfidenceConfig, *, system: str, command: str = ""
) -> ConfidenceModel:
    """The model fitted on every query of ``frame``, its threshold chosen on them (shipped)."""
    model = _fit(frame, config)
    scaler, lr = model[0], model[1]
    cut = threshold_for(_predict(model, frame), ~frame["no_answer"].to_numpy(), config.keep)
    return ConfidenceModel(
        system=system,
        features=FEATURES,
        mean=tuple(float(v) for v in scaler.mean_),
        scale=tuple(float(v) for v in scaler.scale_),
        coef=tuple(float(v) for v in lr.coef_[0]),
        intercept=float(lr.intercept_[0]),
        threshold=math.floor(cut * 1e4) / 1e4,  # never above the fitted cut
        command=command,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfidenceStudy:
    """The confidence searched, fitted and judged as one run folder (:func:`run`).

    Attributes:
        fit: how the confidence is fitted and judged.
        data: the labelled data searched (none: LoCoMo, the LongMemEval oracle and the real
            sessions, :func:`default_data`).
        features: a ``features.parquet`` of an earlier run to reuse (its ``.command`` beside
            it names the command that searched): nothing is searched again.
        model: where the fitted model is written (the package's shipped model by default).
        page: a results page to write too.
        cache: the embedding cache.
        backend: the embedder's backend (``minilm`` only).
        embedder: the embedder (``hash``: tests).
        lme_every: LongMemEval: every abstention question and every N-th other one.
        locomo_conversations: LoCoMo: its first N conversations (None: all).
    """

    study: ClassVar[str] = "confidence"
    fit: ConfidenceConfig = field(default_factory=ConfidenceConfig)
    data: tuple[Path, ...] = ()
    features: Path | None = None
    model: Path = MODEL_FILE
    page: Path | None = None
    cache: Path = Path("runs/cache")
    backend: str = "onnx-int8"
    embedder: str = "minilm"
    lme_every: int = 1
    locomo_conversations: int | None = None


def default_data() -> list[Path]:
    """LoCoMo and the LongMemEval oracle (under the shared folder) and the real sessions."""
    from convlab.paths import REPO_ROOT, shared_dir

    shared = shared_dir()
    return [
        shared / "datasets" / "locomo" / "locomo10.json",
        shared / "datasets" / "longmemeval" / "longmemeval_oracle.json",
        REPO_ROOT / "data" / "real_sessions",
    ]


def _subset(data: LabelledData, config: ConfidenceStudy) -> LabelledData:
    """What of ``data`` is searched: ``lme_every`` of haystacks, ``locomo_conversations``."""
    if data.haystacks is not None and config.lme_every > 1:
        q = data.queries.with_columns(no_answer(data.queries), pl.int_range(pl.len()).alias("i"))
        keep = q.filter(pl.col("no_answer") | (pl.col("i") % config.lme_every == 0))["query_id"]
        convs = data.haystacks.filter(pl.col("query_id").is_in(keep.implode()))
        return data.select(convs["conversation_id"].unique(maintain_order=True).to_list())
    if data.haystacks is None and config.locomo_conversations and data.name.startswith("locomo"):
        ids = data.corpus.conversations["conversation_id"].to_list()
        return data.select(ids[: config.locomo_conversations])
    return data


def searched(config: ConfidenceStudy) -> pl.DataFrame:
    """Every query's features, searched with the default system (or read from ``features``)."""
    if config.features is not None:
        return pl.read_parquet(config.features)
    from convlab.embed import CachedEmbedder, make_embedder
    from convlab.evaluation.datasets import load_labelled
    from convlab.systems import default_system

    backend = config.backend if config.embedder == "minilm" else None
    embedder = CachedEmbedder(make_embedder(config.embedder, backend), config.cache)
    system = default_system()
    frames = []
    for path in config.data or default_data():
        data = _subset(load_labelled(path), config)
        print(f"{data.name}: {data.queries.height} queries", file=sys.stderr)
        frames.append(study_frame(data, system, embedder=embedder))
    return pl.concat(frames)


def _data(frame: pl.DataFrame, config: ConfidenceStudy) -> dict[str, Any]:
    """What the study read: the data sets searched (or the features reused), and how many."""
    names = frame["dataset"].unique(maintain_order=True).to_list()
    record: dict[str, Any] = {"name": "+".join(names), "datasets": names, "queries": frame.height}
    return record | ({"features": str(config.features)} if config.features else {})


def run(config: ConfidenceStudy, out: Path, *, command: Sequence[str] = ()) -> StudyResult:
    """Search (or reuse), judge by grouped CV and by transfer, fit the model; write ``out``.

    Writes ``features.parquet`` and ``features.command`` (the command that searched),
    ``held_out.parquet``, ``summary.json``, ``confidence.md`` (also ``report.md``; and
    ``config.page``), the model (``config.model``), ``groups.parquet`` (each query's group
    and fold) and the contract's ``config.json`` and ``metrics.json`` (the held-out and
    transfer rows).

    Raises:
        ValueError: a reused ``features`` without its ``.command``, or too few groups.
    """
    made_by = shlex.join(command)
    if config.features is not None:  # the searches were made by the command beside the file
        sidecar = config.features.with_suffix(".command")
        if not sidecar.exists():
            raise ValueError(f"{sidecar} is missing: which command searched?")
        made_by = f"{sidecar.read_text().strip()} (searches); {made_by} (fit)"
    frame = searched(config)
    out.mkdir(parents=True, exist_ok=True)
    write_file_atomic(out / "features.parquet", frame.write_parquet)  # before any fit fails
    write_text_atomic(out / "features.command", made_by.split(" (searches); ")[0] + "\n")
    judged = cross_validated(frame, config.fit)
    groups = cv_folds.save(out, judged.select("query_id", "group", "fold"))
    held, moved = summarise(judged), transfer(frame, config.fit)
    from convlab.systems import default_system

    model = fit_model(frame, config.fit, system=default_system().name, command=made_by)
    config.model.write_bytes(msgspec.json.format(msgspec.json.encode(model)) + b"\n")
    commit, state = source_commit()
    text = page(made_by, commit or state, held, moved, model, config.fit.keep)
    write_text_atomic(out / "confidence.md", text)
    if config.page is not None:
        config.page.write_text(text)
    summary = {
        "config": asdict(config.fit),
        "held_out": held.to_dicts(),
        "transfer": moved.to_dicts(),
        "model": msgspec.to_builtins(model),
    }
    write_text_atomic(out / "summary.json", json.dumps(summary, indent=1) + "\n")
    return write_study(
        out,
        config,
        metrics={"held_out": summary["held_out"], "transfer": summary["transfer"]},
        report=text,
        frames={"held_out": judged},
        command=command,
        data=_data(frame, config),
        extra={"groups": groups},
    )


STUDIES.add("confidence", Study("confidence", ConfidenceStudy, run, "eval.confidence"))
