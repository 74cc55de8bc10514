"""Pooling: the top docs of several systems per query, de-duplicated, shuffled, with context."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from convlab.highlight import query_words
from convlab.judge.candidate import Candidate

__all__ = [
    "Candidate",
    "build_pool",
    "pool_hits",
    "shuffle_pool",
    "systems_from_names",
]


def pool_hits(hits: Mapping[str, pl.DataFrame], depth: int) -> pl.DataFrame:
    """The union of each system's top ``depth`` docs per query.

    Args:
        hits: system name -> ranked hits (``query_id, rank, doc_id, conversation_id, unit_id``).
        depth: the pool depth (docs taken from each system's ranking).

    Returns:
        One row per (query, doc): ``query_id, doc_id, conversation_id, unit_id`` (the unit of
        the first system, in the order given, that found it), ``systems`` (every system that
        found it) and ``best_rank``.

    Example:
        >>> a = pl.DataFrame({"query_id": ["q", "q"], "rank": [1, 2], "doc_id": ["x", "y"],
        ...                   "conversation_id": ["c", "c"], "unit_id": ["ux", "uy"]})
        >>> b = a.with_columns(pl.Series("doc_id", ["y", "z"]))
        >>> pool_hits({"A": a, "B": b}, depth=1)["doc_id"].to_list()
        ['x', 'y']
    """
    if depth < 1:
        raise ValueError("depth must be at least 1")
    if not hits:
        raise ValueError("pool at least one system's hits")
    frames = [
        h.filter(pl.col("rank") <= depth)
        .select("query_id", "doc_id", "conversation_id", "unit_id", "rank")
        .with_columns(pl.lit(name).alias("system"), pl.lit(i).alias("_order"))
        for i, (name, h) in enumerate(hits.items())
    ]
    allhits = pl.concat(frames).sort("_order", "query_id", "rank")
    return (
        allhits.group_by("query_id", "doc_id", maintain_order=True)
        .agg(
            pl.col("conversation_id").first(),
            pl.col("unit_id").first(),
            pl.col("system").unique(maintain_order=True).alias("systems"),
            pl.col("rank").min().alias("best_rank"),
        )
        .sort("query_id", "doc_id")
    )


def _query_seed(seed: int, query_id: str) -> int:
    digest = hashlib.sha256(f"{seed}\0{query_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def shuffle_pool(pool: pl.DataFrame, seed: int = 0) -> pl.DataFrame:
    """The pool in judging order: queries in order of first appearance, docs shuffled.

    Each query's docs are sorted by id, then permuted by a generator seeded with ``seed`` and the
    query id: the order depends on neither the systems' order nor their ranks, and one query's
    order does not change when another is added.
    """
    queries = pool["query_id"].unique(maintain_order=True).to_list()
    parts = []
    for q in queries:
        part = pool.filter(pl.col("query_id") == q).sort("doc_id")
        order = np.random.default_rng(_query_seed(seed, q)).permutation(part.height)
        parts.append(part[order.tolist()])
    if not parts:
        return pool
    return pl.concat(parts)


def build_pool(
    data: Any,
    systems: Sequence[Any],
    *,
    embedder: Any,
    depth: int = 10,
    seed: int = 0,
    scope: str = "corpus",
    budget: int = 256,
) -> list[Candidate]:
    """Pool the top ``depth`` docs of ``systems`` for ``data``'s queries, shuffled, with context.

    Args:
        data: labelled data (its queries' labels are not used).
        systems: :class:`convlab.systems.system.System` s to pool from.
        embedder: the embedder (a cached one saves work across runs).
        depth: docs taken from each system per query.
        seed: the shuffling seed.
        scope: ``corpus`` or ``conversation`` (each query inside its ``conversation_id``).
        budget: token budget of each candidate's resurrected context.
    """
    from convlab.evaluation.config import EvalConfig
    from convlab.evaluation.evaluate import evaluate
    from convlab.pipeline.chunks import chunks as make_chunks
    from convlab.resurrection import resurrect

    config = EvalConfig(metrics=("recall@5",), budgets=(budget,), depth=depth, scope=scope)
    ev = evaluate(data, list(systems), embedder=embedder, config=config, progress=False)
    strategy_of = {s.name: s.strategy for s in systems}
    unit_strategy: dict[str, str] = {}
    for name, h in ev.hits.items():
        for u in h["unit_id"].to_list():
            unit_strategy.setdefault(u, strategy_of[name])
    pooled = shuffle_pool(pool_hits(ev.hits, depth), seed)
    corpus = data.corpus
    chunks = make_chunks(corpus, config.policy)
    doc_text = _doc_texts(chunks, set(pooled["doc_id"].to_list()))
    queries = dict(data.queries.select("query_id", "text").iter_rows())
    sizes = dict(pooled.group_by("query_id").len().iter_rows())
    seen: dict[str, int] = {}
    out = []
    for row in pooled.iter_rows(named=True):
        units = ev.units[unit_strategy[row["unit_id"]]].filter(pl.col("unit_id") == row["unit_id"])
        ctx = resurrect([row["unit_id"]], budget, units=units, chunks=chunks).context
        q = row["query_id"]
        seen[q] = seen.get(q, 0) + 1
        out.append(
            Candidate(
                query_id=q,
                query=queries[q],
                doc_id=row["doc_id"],
                conversation_id=row["conversation_id"],
                text=doc_text.get(row["doc_id"], ""),
                context=tuple(ctx.select("role", "text", "is_target").iter_rows()),
                terms=query_words(queries[q]),
                position=seen[q],
                total=sizes[q],
            )
        )
    return out


def _doc_texts(chunks: pl.DataFrame, docs: set[str]) -> dict[str, str]:
    """The text of each doc (a message ``c:mN`` or a turn ``c:tN``), its chunks joined."""
    msg = chunks.with_columns(
        pl.format("{}:m{}", "conversation_id", "message_index").alias("_m"),
        pl.format("{}:t{}", "conversation_id", "turn_index").alias("_t"),
    )
    out: dict[str, str] = {}
    for key in ("_m", "_t"):
        part = msg.filter(pl.col(key).is_in(sorted(docs))).sort("conversation_id", "position")
        for d, text in part.group_by(key, maintain_order=True).agg(pl.col("text")).iter_rows():
            out[d] = "\n".join(text)
    return out


def systems_from_names(names: Sequence[str]) -> list[Any]:
    """Systems from names as reports spell them: ``turn_pair``, ``bm25:message``, ``hybrid:X``.

    Raises:
        ValueError: an unknown strategy, naming the valid ones.
    """
    from convlab.retrieval import Retrieval
    from convlab.strategies import STRATEGIES
    from convlab.systems.system import System

    out = []
    for name in names:
        retrieval, _, strategy = name.rpartition(":")
        if strategy not in STRATEGIES:
            valid = ", ".join(sorted(STRATEGIES))
            raise ValueError(f"unknown strategy {strategy!r} in system {name!r}; valid: {valid}")
        out.append(System(name=name, strategy=strategy, retrieval=Retrieval(retrieval or "dense")))
    return out
