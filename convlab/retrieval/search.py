"""Search an index of units: best unit per doc, filters, scope, and optional rankers.

The order of the steps is fixed:

1. **filter** the rows by conversation (scope), role, side and time range;
2. **hierarchical** (optional, seeds/004): keep only the top conversations by centroid similarity
   above a floor;
3. **retrieve** the ``depth`` best units by cosine similarity (exact inside a subset);
4. **hybrid** (optional): BM25 over the same rows, fused with the dense ranking by RRF
   (``1/(60 + rank)`` summed), which becomes the score;
5. **recency** (optional, seeds/001): ``score * (1 + 0.20 * max(0, 1 - age_days / 14))``;
6. **group per doc** (seeds/000, 001): a doc (a turn in chats, a message in dialogs) takes its
   best unit's score;
7. **density** (optional, seeds/001): ``score * (1 + 0.15 * min(1, (hits in conversation - 1)/3))``;
8. **MMR** (optional): diversify the docs with their best units' vectors;
9. cut to ``k`` and rank from 1.

Without rankers the score is the cosine similarity of the doc's best unit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import numpy as np
import polars as pl

from convlab import schema
from convlab.retrieval.rankers import (
    conversation_centroids,
    density_boost,
    mmr,
    recency_boost,
    rrf,
    top_conversations,
)

__all__ = ["SearchOptions", "search", "search_many"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOptions:
    """How to search.

    Attributes:
        k: docs to return.
        conversations: search only these conversations (None: the whole corpus).
        roles: only units whose target has one of these roles.
        side: only ``question`` or ``answer`` units (qa_pair).
        since: only units at or after this time; until: at or before.
        hybrid: fuse dense and BM25 by reciprocal rank fusion.
        lexical: BM25 alone, no dense retrieval (the lexical baseline; scores are BM25's).
        rrf_k: the RRF constant (60 in Cormack et al.).
        recency: apply the recency boost; recency_days its horizon; recency_max its size.
        density: apply the session density boost; density_max its size.
        mmr: MMR lambda (None: off).
        hierarchical: conversation-first retrieval; top_conversations and conversation_floor
            set how many conversations and the similarity floor.
        depth: units fetched before grouping per doc (None: max(100, 10 k)).
        now: the reference time of the recency boost (None: the newest unit's time).
    """

    k: int = 10
    conversations: tuple[str, ...] | None = None
    roles: tuple[str, ...] | None = None
    side: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    hybrid: bool = False
    lexical: bool = False
    rrf_k: int = 60
    recency: bool = False
    recency_days: float = 14.0
    recency_max: float = 0.20
    density: bool = False
    density_max: float = 0.15
    mmr: float | None = None
    hierarchical: bool = False
    top_conversations: int = 3
    conversation_floor: float = 0.2
    depth: int | None = None
    now: datetime | None = None

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError("k must be at least 1")
        if self.side not in (None, *schema.SIDES):
            raise ValueError(f"side must be one of {schema.SIDES}")
        if self.mmr is not None and not 0.0 <= self.mmr <= 1.0:
            raise ValueError("mmr lambda must be in [0, 1]")
        if self.recency_days <= 0:
            raise ValueError("recency_days must be positive")

    def as_dict(self) -> dict[str, Any]:
        """The options as a plain dict (for run configs)."""
        return asdict(self)


class _Prepared:
    """Arrays derived from an index once, shared by every query of a batch."""

    def __init__(self, index: Any, options: SearchOptions) -> None:
        u = index.units
        self.units = u
        self.conv = u["conversation_id"].to_numpy()
        self.mask = np.ones(u.height, dtype=bool)
        if options.roles is not None:
            self.mask &= u["role"].is_in(list(options.roles)).fill_null(False).to_numpy()
        if options.side is not None:
            self.mask &= (u["side"] == options.side).fill_null(False).to_numpy()
        if options.since is not None:
            self.mask &= (u["timestamp"] >= options.since).fill_null(False).to_numpy()
        if options.until is not None:
            self.mask &= (u["timestamp"] <= options.until).fill_null(False).to_numpy()
        self.by_conv: dict[str, np.ndarray] = {}
        order = np.argsort(self.conv, kind="stable")
        ids, starts = np.unique(self.conv[order], return_index=True)
        for i, cid in enumerate(ids):
            end = starts[i + 1] if i + 1 < len(starts) else len(order)
            self.by_conv[str(cid)] = np.sort(order[starts[i] : end])
        self.times = u["timestamp"].to_list()
        self.doc_ids = u["doc_ids"].to_list()
        self.now = options.now or u["timestamp"].max()
        self.centroids: tuple[np.ndarray, np.ndarray] | None = None
        if options.hierarchical and u.height:
            all_rows = np.arange(u.height)
            self.centroids = conversation_centroids(index.vectors(all_rows), self.conv)

    def rows(self, conversations: tuple[str, ...] | None) -> np.ndarray | None:
        if conversations is None:
            return None if self.mask.all() else np.flatnonzero(self.mask)
        parts = [self.by_conv.get(c, np.zeros(0, np.int64)) for c in conversations]
        r = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        return r[self.mask[r]]


def search(
    index: Any,
    query: str,
    k: int | None = None,
    *,
    embedder: Any,
    options: SearchOptions | None = None,
    bm25: Any = None,
) -> pl.DataFrame:
    """Search ``index`` for ``query``; one row per doc (see the module docstring for the steps).

    Args:
        index: a :class:`convlab.index.VectorIndex`.
        query: the text to search for.
        k: docs to return (overrides ``options.k``).
        embedder: the embedder the index was built with.
        options: filters and rankers.
        bm25: a :class:`convlab.index.bm25.BM25Index` over the same units (needed for hybrid).

    Returns:
        Hits: :data:`convlab.schema.HITS` columns, then ``text``, ``role``, ``side``,
        ``timestamp``, ``chunk_ids`` of the doc's best unit.

    Example:
        >>> hits = search(index, "nginx websockets", embedder=emb)  # doctest: +SKIP
    """
    options = options or SearchOptions()
    if k is not None:
        options = SearchOptions(**{**options.as_dict(), "k": k})
    q = pl.DataFrame({"query_id": ["q"], "text": [query]})
    return search_many(index, q, embedder=embedder, options=options, bm25=bm25)


def search_many(
    index: Any,
    queries: pl.DataFrame,
    *,
    embedder: Any,
    options: SearchOptions | None = None,
    bm25: Any = None,
    scoped: bool = False,
) -> pl.DataFrame:
    """Search many queries at once (embedded in one call).

    Args:
        index: a :class:`convlab.index.VectorIndex`.
        queries: ``query_id`` and ``text`` columns, and ``conversation_id`` when ``scoped``.
        embedder: the embedder the index was built with.
        options: filters and rankers shared by every query.
        bm25: BM25 over the same units (for hybrid).
        scoped: search each query only inside its own ``conversation_id`` (LoCoMo's protocol).
    """
    options = options or SearchOptions()
    if (options.hybrid or options.lexical) and bm25 is None:
        raise ValueError("hybrid or lexical search needs a BM25 index over the units (bm25=...)")
    if options.hybrid and options.lexical:
        raise ValueError("choose hybrid or lexical, not both")
    prep = _Prepared(index, options)
    texts = queries["text"].to_list()
    qvecs = np.asarray(embedder.encode(texts), dtype=np.float32) if texts else None
    scopes = (
        queries["conversation_id"].to_list()
        if scoped and "conversation_id" in queries.columns
        else [None] * len(texts)
    )
    frames = []
    for i, qid in enumerate(queries["query_id"].to_list()):
        convs = options.conversations
        if scopes[i] is not None:
            convs = (str(scopes[i]),)
        assert qvecs is not None
        hits = _one(index, prep, qvecs[i], texts[i], convs, options, bm25)
        frames.append(hits.with_columns(pl.lit(qid, dtype=pl.String).alias("query_id")))
    if not frames:
        return _empty_hits()
    out = pl.concat(frames)
    return out.select([*schema.HITS, *[c for c in out.columns if c not in schema.HITS]])


def _empty_hits() -> pl.DataFrame:
    extra = {
        "text": pl.String,
        "role": pl.String,
        "side": pl.String,
        "timestamp": schema.UTC_TIME,
        "chunk_ids": pl.List(pl.String),
    }
    return pl.DataFrame(schema={**dict(schema.HITS), **extra})  # type: ignore[dict-item]


def _one(
    index: Any,
    prep: _Prepared,
    qvec: np.ndarray,
    text: str,
    convs: tuple[str, ...] | None,
    options: SearchOptions,
    bm25: Any,
) -> pl.DataFrame:
    rows = prep.rows(convs)
    if options.hierarchical and prep.centroids is not None:
        ids, cents = prep.centroids
        allowed = set(convs) if convs is not None else None
        keep = [c for c in ids if allowed is None or c in allowed]
        sel = np.isin(ids, keep)
        chosen = top_conversations(
            qvec, ids[sel], cents[sel], options.top_conversations, options.conversation_floor
        )
        rows = prep.rows(tuple(chosen))
    if rows is not None and rows.size == 0:
        return _empty_hits().drop("query_id")
    depth = options.depth or max(100, 10 * options.k)
    if options.lexical:
        lex_scores, lex_rows = bm25.search(text, depth, rows=rows)
        dense_rows, dense_scores = lex_rows, lex_scores.astype(np.float64)
    else:
        s, r = index.search(qvec[None, :], depth, rows=rows)
        keep = r[0] >= 0
        dense_rows, dense_scores = r[0][keep], s[0][keep].astype(np.float64)
    if options.hybrid:
        _, lex_rows = bm25.search(text, depth, rows=rows)
        fused = rrf([dense_rows.tolist(), lex_rows.tolist()], k=options.rrf_k)
        cand = np.fromiter(fused.keys(), dtype=np.int64, count=len(fused))
        scores = np.fromiter(fused.values(), dtype=np.float64, count=len(fused))
    else:
        cand, scores = dense_rows, dense_scores
    if cand.size == 0:
        return _empty_hits().drop("query_id")
    if options.recency and prep.now is not None:
        scores = recency_boost(
            scores,
            [prep.times[i] for i in cand],
            prep.now,
            horizon_days=options.recency_days,
            max_boost=options.recency_max,
        )
    # group per doc: best unit per doc
    best: dict[str, tuple[float, int]] = {}
    for row, sc in zip(cand.tolist(), scores.tolist(), strict=True):
        for doc in prep.doc_ids[row]:
            if doc not in best or sc > best[doc][0]:
                best[doc] = (sc, row)
    docs = sorted(best, key=lambda d: (-best[d][0], best[d][1]))
    doc_scores = np.array([best[d][0] for d in docs])
    doc_rows = np.array([best[d][1] for d in docs], dtype=np.int64)
    if options.density:
        doc_scores = density_boost(
            doc_scores, [str(prep.conv[i]) for i in doc_rows], max_boost=options.density_max
        )
        order = np.argsort(-doc_scores, kind="stable")
        docs = [docs[i] for i in order]
        doc_scores, doc_rows = doc_scores[order], doc_rows[order]
    if options.mmr is not None:
        pool = min(len(docs), max(options.k * 5, 50))
        pick = mmr(doc_scores[:pool], index.vectors(doc_rows[:pool]), options.k, options.mmr)
        docs = [docs[i] for i in pick]
        doc_scores, doc_rows = doc_scores[pick], doc_rows[pick]
    docs, doc_scores, doc_rows = docs[: options.k], doc_scores[: options.k], doc_rows[: options.k]
    u = prep.units[doc_rows.tolist()]
    return u.select(
        pl.Series("rank", np.arange(1, len(docs) + 1), dtype=pl.Int32),
        pl.Series("score", doc_scores, dtype=pl.Float64),
        "unit_id",
        pl.Series("doc_id", docs, dtype=pl.String),
        "conversation_id",
        "turn_index",
        "message_index",
        "strategy",
        "text",
        "role",
        "side",
        "timestamp",
        "chunk_ids",
    )
