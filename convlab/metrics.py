"""Retrieval metrics, computed with ir_measures; metric names parsed in one place.

Names (case-insensitive): ``recall@k`` (share of the relevant docs in the top k: LoCoMo's
recall; ir_measures ``R@k``), ``success@k`` (at least one relevant doc in the top k:
LongMemEval's recall_any; ``Success@k``), ``recall_all@k`` (every relevant doc in the top k:
LongMemEval's recall_all, 1 exactly when ``R@k`` is 1), ``ndcg@k`` (Järvelin & Kekäläinen 2002,
binary gains; ``nDCG@k``) and ``mrr`` (reciprocal rank of the first relevant doc; ``RR``).

Queries with no relevant doc (a few LoCoMo questions whose evidence could not be cleaned) are left
out of retrieval metrics; :func:`per_query` reports how many were.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import ir_measures
import polars as pl
from ir_measures import Qrel, ScoredDoc

__all__ = ["Metric", "aggregate", "parse_metric", "per_query"]

_NAME = re.compile(r"^(recall|success|recall_all|ndcg)@(\d+)$|^(mrr)$")


@dataclass(frozen=True, slots=True)
class Metric:
    """A parsed metric name: its family and cutoff."""

    family: str
    k: int | None

    @property
    def name(self) -> str:
        """The canonical name, e.g. ``recall@5``."""
        return self.family if self.k is None else f"{self.family}@{self.k}"

    def measure(self) -> ir_measures.Measure:
        """The ir_measures measure that computes it (R@k for recall_all)."""
        if self.family == "mrr":
            return ir_measures.RR
        base = {
            "recall": ir_measures.R,
            "recall_all": ir_measures.R,
            "success": ir_measures.Success,
            "ndcg": ir_measures.nDCG,
        }[self.family]
        return base @ self.k


def parse_metric(name: str) -> Metric:
    """Parse ``"recall@5"``, ``"ndcg@10"``, ``"mrr"`` ...

    Raises:
        ValueError: naming the valid forms.
    """
    m = _NAME.match(name.strip().lower())
    if not m:
        raise ValueError(
            f"unknown metric {name!r}; valid: recall@k, success@k, recall_all@k, ndcg@k, mrr"
        )
    if m.group(3):
        return Metric("mrr", None)
    return Metric(m.group(1), int(m.group(2)))


def per_query(hits: pl.DataFrame, queries: pl.DataFrame, metrics: Sequence[str]) -> pl.DataFrame:
    """One row per (query, metric): ``query_id, metric, value``.

    Args:
        hits: ranked docs per query (``query_id, doc_id, rank``; rank 1 is best).
        queries: :data:`convlab.schema.QUERIES` (``relevant`` doc ids).
        metrics: metric names.
    """
    parsed = [parse_metric(m) for m in metrics]
    judged = queries.filter(pl.col("relevant").list.len() > 0)
    qrels = [
        Qrel(q, d, 1) for q, rel in judged.select("query_id", "relevant").iter_rows() for d in rel
    ]
    run = [
        ScoredDoc(q, d, -float(r))
        for q, d, r in hits.select("query_id", "doc_id", "rank").iter_rows()
    ]
    measures = {m.measure() for m in parsed}
    values: dict[tuple[str, str], float] = {}
    for res in ir_measures.iter_calc(list(measures), qrels, run):
        values[(res.query_id, str(res.measure))] = float(res.value)
    rows = []
    for q in judged["query_id"].to_list():
        for m in parsed:
            v = values.get((q, str(m.measure())), 0.0)
            if m.family == "recall_all":
                v = 1.0 if v >= 1.0 - 1e-12 else 0.0
            rows.append({"query_id": q, "metric": m.name, "value": v})
    return pl.DataFrame(
        rows, schema={"query_id": pl.String, "metric": pl.String, "value": pl.Float64}
    )


def aggregate(per_query_frame: pl.DataFrame, by: Sequence[str] = ()) -> pl.DataFrame:
    """Mean of each metric (and the number of queries), optionally grouped by columns."""
    keys = [*by, "metric"]
    return (
        per_query_frame.group_by(keys)
        .agg(pl.col("value").mean().alias("mean"), pl.len().alias("queries"))
        .sort(keys)
    )
