"""An evaluation's systems judged by LongMemEval's official protocol, beside the reference.

:func:`score_official` takes each system's hits (the docs it returned per question), completes
each ranking with the keys it did not return
(:func:`~convlab.evaluation.lme_official.complete_rankings`), measures it as the official code
does (:func:`~convlab.evaluation.lme_official.official_measures`), adds the official flat BM25
(:data:`~convlab.evaluation.lme_bm25.REFERENCE`, rank_bm25 over each haystack's keys), and
averages both ways (strict, non-abstention), with each system tested against the baseline
inside each average (paired randomization, Holm over the systems:
:func:`convlab.evaluation.significance.compare`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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

__all__ = ["OfficialScores", "score_official"]


@dataclass(frozen=True, slots=True)
class OfficialScores:
    """The official measures of an evaluation's systems.

    Attributes:
        per_question: ``system, query_id, category, level, metric, value``: every question,
            abstention ones included (the averages choose).
        summary: ``system, level, metric, average, mean, queries``.
        significance: ``system, level, average, metric, mean, ci_low, ci_high, delta,
            p_randomization, p_wilcoxon, p_holm, significant`` against the baseline.
    """

    per_question: pl.DataFrame
    summary: pl.DataFrame
    significance: pl.DataFrame


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
    parts = [
        official_measures(complete_rankings(h, labels.turns)).with_columns(
            pl.lit(name).alias("system")
        )
        for name, h in hits.items()
    ]
    if reference:
        ranked = flat_bm25(labels.turns, labels.questions)
        parts.append(official_measures(ranked).with_columns(pl.lit(REFERENCE).alias("system")))
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
    return OfficialScores(per_q, summary, significance)
