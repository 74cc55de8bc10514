"""An evaluation's systems judged by LongMemEval's official protocol, beside the reference.

:func:`score_official` takes each system's hits (the docs it returned per question), completes
each ranking with the keys it did not return
(:func:`~convlab.evaluation.lme_official.complete_rankings`), measures it as the official code
does (:func:`~convlab.evaluation.lme_official.official_measures`), adds the official flat BM25
(:data:`~convlab.evaluation.lme_bm25.REFERENCE`, rank_bm25 over each haystack's keys), each at
turn level, session level from turns, and the official session granularity
(:data:`SESSION_KEYS`: :func:`session_key_rankings` for a system, BM25 over session keys for the
reference), and
averages both ways (strict, non-abstention), with each system tested against the baseline
inside each average (paired randomization, Holm over the systems:
:func:`convlab.evaluation.significance.compare`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from convlab.evaluation.lme_bm25 import REFERENCE, flat_bm25
from convlab.evaluation.lme_official import (
    AVERAGES,
    OfficialLabels,
    averages,
    complete_rankings,
    in_average,
    official_measures,
)
from convlab.evaluation.significance import compare

__all__ = ["SESSION_KEYS", "OfficialScores", "score_official", "session_key_rankings"]

SESSION_KEYS = "session_keys"
"""The level of the official session granularity (one key per session)."""


@dataclass(frozen=True, slots=True)
class OfficialScores:
    """The official measures of an evaluation's systems.

    Attributes:
        per_question: ``system, query_id, category, level, metric, value``: every question,
            abstention ones included (the averages choose).
        summary: ``system, level, metric, average, mean, queries``.
        significance: ``system, level, average, metric, mean, ci_low, ci_high, delta,
            p_randomization, p_wilcoxon, p_holm, significant`` against the baseline.
        questions: ``query_id`` and one boolean column per average (:data:`AVERAGES`): whether
            the question counts in it, so a run folder's per-question values can be averaged
            again without the data set.
    """

    per_question: pl.DataFrame
    summary: pl.DataFrame
    significance: pl.DataFrame
    questions: pl.DataFrame


def _session_keys(ranked: pl.DataFrame, system: str) -> pl.DataFrame:
    """The official measures of a ranking of session keys, at level :data:`SESSION_KEYS`."""
    return official_measures(ranked, turns=False).with_columns(
        pl.lit(SESSION_KEYS).alias("level"), pl.lit(system).alias("system")
    )


def score_official(
    hits: Mapping[str, pl.DataFrame],
    labels: OfficialLabels,
    *,
    baseline: str,
    seed: int = 0,
    reference: bool = True,
) -> OfficialScores:
    """Every system's official measures per question, their means and their tests.

    Args:
        hits: system name -> its hits (``query_id, rank, doc_id``); the labels' turn keys must
            carry ``doc_id`` (:func:`~convlab.evaluation.lme_official.with_doc_ids`).
        labels: the official keys and gold.
        baseline: the system the others are tested against.
        seed: of the permutations and the bootstrap.
        reference: add the official flat BM25 as the system :data:`REFERENCE`.
    """
    parts: list[pl.DataFrame] = []
    for name, h in hits.items():
        ranked = complete_rankings(h, labels.turns)
        parts += [
            official_measures(ranked).with_columns(pl.lit(name).alias("system")),
            _session_keys(session_key_rankings(ranked, labels), name),
        ]
    if reference:
        ranked = flat_bm25(labels.turns, labels.questions)
        parts += [
            official_measures(ranked).with_columns(pl.lit(REFERENCE).alias("system")),
            _session_keys(flat_bm25(labels.sessions, labels.questions), REFERENCE),
        ]
    categories = labels.questions.select("query_id", "category")
    per_q = (
        pl.concat(parts)
        .join(categories, on="query_id", how="left")
        .select("system", "query_id", "category", "level", "metric", "value")
    )
    summary = averages(per_q.drop("category"), labels.questions)
    tests = []
    for average in AVERAGES:
        part = in_average(per_q, labels.questions, average).select(
            "system", "query_id", pl.format("{}|{}", "level", "metric").alias("metric"), "value"
        )
        tested = compare(part, baseline, seed=seed)
        tests.append(
            tested.with_columns(
                pl.col("metric").str.split_exact("|", 1).struct.rename_fields(["level", "m"])
            )
            .unnest("metric")
            .rename({"m": "metric"})
            .with_columns(pl.lit(average).alias("average"))
        )
    significance = pl.concat(tests, how="diagonal_relaxed")
    first = ["system", "level", "average", "metric"]
    significance = significance.select(*first, *[c for c in significance.columns if c not in first])
    q = labels.questions
    members = q.select(
        "query_id",
        *[
            pl.col("query_id").is_in(in_average(q, q, a)["query_id"].implode()).alias(a)
            for a in AVERAGES
        ],
    )
    return OfficialScores(per_q, summary, significance, members)


def session_key_rankings(rankings: pl.DataFrame, labels: OfficialLabels) -> pl.DataFrame:
    """Each question's ranking of its session keys, from a complete ranking of its turn keys.

    A session comes at the rank of its best-ranked turn key; sessions none of whose user
    messages is a key (no user message) follow in haystack order. Unlike
    :func:`~convlab.evaluation.lme_official.turn_to_session_at`, each session is one key,
    gold as the official code judges a session key
    (:func:`~convlab.evaluation.lme_official.read_official`), so the figures stand beside the
    paper's session rows.

    Args:
        rankings: ``query_id, rank, key, gold`` over every turn key
            (:func:`~convlab.evaluation.lme_official.complete_rankings`).
        labels: the keys; ``labels.turns`` map turn keys to sessions.

    Returns:
        ``query_id, rank, key, gold`` over every session key, ranks from 1.

    Example:
        Turn keys ``s1_1`` (rank 1), ``answer_2_1`` (rank 2), ``s1_3`` (rank 3) make the session
        ranking ``s1``, ``answer_2``.
    """
    turn_session = labels.turns.select("query_id", "key", "session_id").unique(
        ["query_id", "key"], keep="first"
    )
    first = (
        rankings.join(turn_session, on=["query_id", "key"], how="left")
        .group_by("query_id", "session_id")
        .agg(pl.col("rank").min().cast(pl.Float64).alias("order"))
    )
    big = float(np.iinfo(np.int32).max)
    return (
        labels.sessions.select("query_id", "session_id", "position", "key", "gold")
        .join(first, on=["query_id", "session_id"], how="left")
        .with_columns(pl.col("order").fill_null(big + pl.col("position").cast(pl.Float64)))
        .sort("query_id", "order", "position", maintain_order=True)
        .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("query_id").alias("rank"))
        .select("query_id", "rank", "key", "gold")
    )
