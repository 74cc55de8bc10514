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
- :func:`fit_model`: the model fitted on every query, as shipped.

The model is a logistic regression over standardised features (scikit-learn), calibrated in
the sense that its output is a fitted probability; the threshold keeps ``keep`` (0.95) of the
answerable training queries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from convlab.evaluation import folds as cv_folds
from convlab.evaluation.datasets import LabelledData
from convlab.systems.confidence import FEATURES, ConfidenceModel, features_frame
from convlab.systems.hits import DEPTH
from convlab.systems.system import System

if TYPE_CHECKING:
    from convlab.protocols import Embedder

__all__ = [
    "ConfidenceConfig",
    "cross_validated",
    "fit_model",
    "no_answer",
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

    Folds are groups (:func:`convlab.evaluation.folds.splits`); each fold's model and
    threshold see its training queries only.

    Raises:
        ValueError: fewer than 2 groups.
    """
    splits = cv_folds.splits(frame["group"].to_list(), config.folds)
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
