"""Retrieval metrics, computed with ir_measures; every metric is one row of the metric table.

The table, the name parser and the error listing the valid names are
:mod:`convlab.metric_names` (adding a metric is adding a row there). For a query with
relevant docs R and ranking d_1, d_2, ... the rows define ``recall@k``, ``success@k``,
``recall_all@k``, ``ndcg@k``, ``judged@k``, ``mrr`` and ``bpref`` (see each row's description).
``judged@k`` matters with pooled judgments (:mod:`convlab.judge`): a system that ranks unjudged
docs high is not wrong, it is unmeasured, and this says how much.

Without judgments of non-relevant docs (LoCoMo, LongMemEval: only relevant docs are known),
``judged@k`` counts only the relevant docs found and ``bpref`` sees no non-relevant doc.

A ``session:`` prefix (``session:success@5``) scores the same measure at session level
(LongMemEval, Wu et al., ICLR 2025, ``src/retrieval/eval_utils.py``): each query's ranked docs
are collapsed to their conversations (:func:`collapse_to_sessions`: a session takes the rank of
its best doc; the session list is the first occurrences in order), judged against the query's
relevant sessions. Success and recall_all are then exactly LongMemEval's
``evaluate_retrieval_turn2session``, which widens k until k distinct sessions are in the list;
its nDCG differs: it counts every turn of a relevant session as relevant, ours counts each
session once.

Queries with no relevant doc (a few LoCoMo questions whose evidence could not be cleaned,
LongMemEval's abstention questions) are left out of retrieval metrics.

Example:
    >>> from convlab.metric_names import parse_metric
    >>> str(parse_metric("recall_all@5").measure())
    'R@5'
"""

from __future__ import annotations

from collections.abc import Sequence

import ir_measures
import polars as pl
from ir_measures import Qrel, ScoredDoc

from convlab.metric_names import Metric, parse_metric

__all__ = ["aggregate", "collapse_to_sessions", "per_query"]


def collapse_to_sessions(hits: pl.DataFrame) -> pl.DataFrame:
    """Each query's ranking of docs as a ranking of their sessions (conversations).

    A session takes the place of its best-ranked doc; later docs of the same session are dropped
    and the ranks renumbered 1, 2, ... (``query_id, doc_id, rank``; ``doc_id`` is the session).

    Example:
        >>> h = pl.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a:t0", "a:t1", "b:t0"],
        ...                   "conversation_id": ["a", "a", "b"], "rank": [1, 2, 3]})
        >>> collapse_to_sessions(h).rows()
        [('q', 'a', 1), ('q', 'b', 2)]
    """
    return (
        hits.sort("query_id", "rank")
        .unique(["query_id", "conversation_id"], keep="first", maintain_order=True)
        .select(
            "query_id",
            pl.col("conversation_id").alias("doc_id"),
            pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("query_id").alias("rank"),
        )
    )


def per_query(
    hits: pl.DataFrame,
    queries: pl.DataFrame,
    metrics: Sequence[str],
    *,
    sessions: pl.DataFrame | None = None,
    judged: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per (query, metric): ``query_id, metric, value``.

    Args:
        hits: ranked docs per query (``query_id, doc_id, rank``; rank 1 is best; and
            ``conversation_id`` for session metrics).
        queries: :data:`convlab.schema.QUERIES` (``relevant`` doc ids).
        metrics: metric names.
        sessions: ``query_id, relevant`` (conversation ids), needed by ``session:`` metrics.
        judged: every judged doc (``query_id, doc_id, relevant``: a bool), when the labels come
            from judgments; judged non-relevant docs then count for ``judged@k`` and ``bpref``.

    Raises:
        ValueError: a ``session:`` metric without ``sessions``.
    """
    parsed = [parse_metric(m) for m in metrics]
    doc = [m for m in parsed if m.level == "doc"]
    ses = [m for m in parsed if m.level == "session"]
    frames = [_scored(hits, queries, doc, judged)] if doc else []
    if ses:
        if sessions is None:
            raise ValueError(
                f"session metrics ({ses[0].name}) need session-level relevance (sessions=...)"
            )
        frames.append(_scored(collapse_to_sessions(hits), sessions, ses))
    if not frames:
        return pl.DataFrame(schema=_PER_QUERY)
    return pl.concat(frames)


_PER_QUERY = {"query_id": pl.String, "metric": pl.String, "value": pl.Float64}


def _scored(
    hits: pl.DataFrame,
    relevance: pl.DataFrame,
    parsed: list[Metric],
    judgments: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """``parsed`` metrics of ``hits`` against ``relevance`` (``query_id, relevant``).

    ``judgments`` (``query_id, doc_id, relevant``) adds the judged non-relevant docs.
    """
    judged = relevance.filter(pl.col("relevant").list.len() > 0)
    qrels = [
        Qrel(q, d, 1) for q, rel in judged.select("query_id", "relevant").iter_rows() for d in rel
    ]
    if judgments is not None:
        positive = {(q.query_id, q.doc_id) for q in qrels}
        qrels += [
            Qrel(q, d, 0)
            for q, d in judgments.filter(~pl.col("relevant"))
            .select("query_id", "doc_id")
            .iter_rows()
            if (q, d) not in positive
        ]
    run = [
        ScoredDoc(q, d, -float(r))
        for q, d, r in hits.select("query_id", "doc_id", "rank").iter_rows()
    ]
    measures = {m.measure() for m in parsed}
    values: dict[tuple[str, str], float] = {}
    label = {m: str(m) for m in measures}  # str() of a measure is slow, and asked per result
    for res in ir_measures.iter_calc(list(measures), qrels, run):
        m = res.measure
        values[(res.query_id, label[m] if m in label else str(m))] = float(res.value)
    keys = [(m.name, str(m.measure()), m.row.all_of) for m in parsed]
    ids, names, scores = [], [], []
    for q in judged["query_id"].to_list():
        for name, measure, all_of in keys:
            v = values.get((q, measure), 0.0)
            if all_of:
                v = 1.0 if v >= 1.0 - 1e-12 else 0.0
            ids.append(q)
            names.append(name)
            scores.append(v)
    return pl.DataFrame({"query_id": ids, "metric": names, "value": scores}, schema=_PER_QUERY)


def aggregate(per_query_frame: pl.DataFrame, by: Sequence[str] = ()) -> pl.DataFrame:
    """Mean of each metric (and the number of queries), optionally grouped by columns.

    Each group's values are summed in sorted order, so the means do not depend on the order of
    the rows (or on how threads split them): the same per-query values give bit-identical means.
    """
    keys = [*by, "metric"]
    return (
        per_query_frame.group_by(keys)
        .agg(pl.col("value").sort().mean().alias("mean"), pl.len().alias("queries"))
        .sort(keys)
    )
