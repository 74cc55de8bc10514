"""Retrieval metrics, computed with ir_measures; every metric is one row of :data:`METRICS`.

A row names a metric family, says whether its name takes a cutoff (``recall@5``) or not
(``mrr``), how ir_measures measures it and what it is; the name parser, the measure and the
error listing the valid names are all made from the table, so adding a metric is adding a row.
Names are case-insensitive. For a query with relevant docs R and ranking d_1, d_2, ... the rows
define ``recall@k``, ``success@k``, ``recall_all@k``, ``ndcg@k``, ``judged@k``, ``mrr`` and
``bpref`` (see each row's description). ``judged@k`` matters with pooled judgments
(:mod:`convlab.judge`): a system that ranks unjudged docs high is not wrong, it is unmeasured,
and this says how much.

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
    >>> parse_metric("Session:nDCG@10").name
    'session:ndcg@10'
    >>> str(parse_metric("recall_all@5").measure())
    'R@5'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ir_measures
import polars as pl
from ir_measures import Qrel, ScoredDoc

__all__ = [
    "LEVELS",
    "METRICS",
    "Metric",
    "MetricFamily",
    "aggregate",
    "collapse_to_sessions",
    "parse_metric",
    "per_query",
]

LEVELS = ("doc", "session")
"""Where a metric judges: the docs (turns or messages) or the sessions (conversations)."""


@dataclass(frozen=True, slots=True)
class MetricFamily:
    """One row of the metric table.

    Attributes:
        name: the family's name, e.g. ``recall``.
        cutoff: whether the name takes a cutoff ``@k``.
        measure: the ir_measures measure for a cutoff (None without one).
        description: what it is: its formula and citation.
        all_of: the value is 1 when the measure is 1 and 0 otherwise (``recall_all``).
    """

    name: str
    cutoff: bool
    measure: Callable[[int | None], ir_measures.Measure]
    description: str
    all_of: bool = False

    @property
    def form(self) -> str:
        """How a name of this family is written, e.g. ``recall@k`` or ``mrr``."""
        return f"{self.name}@k" if self.cutoff else self.name


METRICS = (
    MetricFamily(
        "recall",
        True,
        lambda k: ir_measures.R @ k,
        "|R ∩ {d_1..d_k}| / |R| (LoCoMo's recall; ir_measures R@k)",
    ),
    MetricFamily(
        "success",
        True,
        lambda k: ir_measures.Success @ k,
        "1 if any d_i (i <= k) is in R, else 0 (LongMemEval's recall_any; Success@k)",
    ),
    MetricFamily(
        "recall_all",
        True,
        lambda k: ir_measures.R @ k,
        "1 if R ⊆ {d_1..d_k}, else 0 (LongMemEval's recall_all: R@k == 1)",
        all_of=True,
    ),
    MetricFamily(
        "ndcg",
        True,
        lambda k: ir_measures.nDCG @ k,
        "DCG@k / IDCG@k with DCG@k = Σ_{i<=k} rel_i / log2(i + 1), binary gains, IDCG@k the "
        "DCG of |R| relevant docs ranked first (Järvelin & Kekäläinen, 2002; nDCG@k)",
    ),
    MetricFamily(
        "judged",
        True,
        lambda k: ir_measures.Judged @ k,
        "share of d_1..d_k that were judged at all, relevant or not (Judged@k)",
    ),
    MetricFamily(
        "mrr",
        False,
        lambda k: ir_measures.RR,
        "1 / rank of the first relevant doc (RR)",
    ),
    MetricFamily(
        "bpref",
        False,
        lambda k: ir_measures.Bpref,
        "1/|R| Σ_{r ∈ R} (1 - |n ranked above r| / min(|R|, |N|)), n ranging over the judged "
        "non-relevant docs N; unjudged docs are ignored, so it holds up under incomplete "
        "judgments (Buckley & Voorhees, SIGIR 2004; Bpref)",
    ),
)
"""The metrics, one row each, in the order the error text lists them."""

_FAMILIES = {f.name: f for f in METRICS}
if len(_FAMILIES) != len(METRICS):  # pragma: no cover - a row written twice
    raise ValueError("a metric family is in METRICS twice")


def _alternatives(names: Sequence[str]) -> str:
    return "|".join(re.escape(n) for n in names)


_NAME = re.compile(
    rf"^(?:({_alternatives(LEVELS[1:])}):)?"
    rf"(?:({_alternatives([f.name for f in METRICS if f.cutoff])})@(\d+)"
    rf"|({_alternatives([f.name for f in METRICS if not f.cutoff])}))$"
)
_PREFIXES = " or ".join(f"'{level}:'" for level in LEVELS[1:])
_VALID = f"valid: {', '.join(f.form for f in METRICS)}, each optionally prefixed {_PREFIXES}"


@dataclass(frozen=True, slots=True)
class Metric:
    """A parsed metric name: its family and cutoff."""

    family: str
    k: int | None
    level: str = "doc"

    @property
    def name(self) -> str:
        """The canonical name, e.g. ``recall@5`` or ``session:ndcg@10``."""
        base = self.family if self.k is None else f"{self.family}@{self.k}"
        return base if self.level == "doc" else f"{self.level}:{base}"

    @property
    def row(self) -> MetricFamily:
        """Its row of :data:`METRICS`."""
        return _FAMILIES[self.family]

    def measure(self) -> ir_measures.Measure:
        """The ir_measures measure that computes it (R@k for recall_all)."""
        return self.row.measure(self.k)


def parse_metric(name: str) -> Metric:
    """Parse ``"recall@5"``, ``"ndcg@10"``, ``"mrr"``, ``"session:success@5"`` ...

    Raises:
        ValueError: naming the valid forms.
    """
    m = _NAME.match(name.strip().lower())
    if not m:
        raise ValueError(f"unknown metric {name!r}; {_VALID}")
    level = m.group(1) or "doc"
    if m.group(4):
        return Metric(m.group(4), None, level)
    return Metric(m.group(2), int(m.group(3)), level)


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
