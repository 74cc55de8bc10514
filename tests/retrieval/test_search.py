"""Search and rankers, with expected values worked out by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from convlab import schema
from convlab.embed import HashEmbedder, embed_texts
from convlab.index import VectorIndex
from convlab.index.bm25 import BM25Index
from convlab.retrieval import Retrieval, SearchOptions, search, search_haystacks, search_many
from convlab.retrieval.rankers import density_boost, mmr, recency_boost, top_conversations

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def test_recency_by_hand() -> None:
    times = [NOW, NOW - timedelta(days=7), NOW - timedelta(days=14), NOW - timedelta(days=30), None]
    out = recency_boost(np.ones(5), times, NOW)
    assert out.tolist() == pytest.approx([1.2, 1.1, 1.0, 1.0, 1.0])


def test_density_by_hand() -> None:
    out = density_boost(np.ones(7), ["a", "b", "b", "c", "c", "c", "c"])
    # a: 1 hit -> 0; b: 2 hits -> 0.15 * 1/3 = 5%; c: 4 hits -> 0.15 * min(1, 3/3) = 15%
    assert out.tolist() == pytest.approx([1.0, 1.05, 1.05, 1.15, 1.15, 1.15, 1.15])


def test_mmr_by_hand() -> None:
    # d0 and d1 are near-duplicates, d2 is different; relevance 0.9, 0.85, 0.6.
    v = np.array([[1.0, 0.0], [0.995, 0.0998], [0.0, 1.0]])
    # lambda 0.5: pick d0 (0.45); then d1: 0.425 - 0.5*0.995 < 0; d2: 0.3 - 0 = 0.3 -> d2
    assert mmr(np.array([0.9, 0.85, 0.6]), v, 3, lam=0.5) == [0, 2, 1]
    assert mmr(np.array([0.9, 0.85, 0.6]), v, 3, lam=1.0) == [0, 1, 2]


def test_top_conversations_floor() -> None:
    ids = np.array(["a", "b", "c"])
    cents = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32)
    assert top_conversations(np.array([1.0, 0.0]), ids, cents, 3, floor=0.5) == ["a", "b"]


TEXTS = [
    # conversation, turn, role, text, days before NOW
    ("c1", 0, "user", "nginx websocket upgrade header missing", 20),
    ("c1", 0, "assistant", "add proxy_http_version and the upgrade header", 20),
    ("c1", 1, "user", "socket closes after sixty seconds idle timeout", 20),
    ("c2", 0, "user", "postgres index concurrently without locking writes", 1),
    ("c2", 1, "assistant", "drop the invalid index and rebuild it", 1),
    ("c3", 0, "user", "websocket timeout in kubernetes ingress", 2),
]


@pytest.fixture(scope="module")
def setup() -> tuple[VectorIndex, HashEmbedder, BM25Index]:
    rows = []
    for i, (c, t, role, text, days) in enumerate(TEXTS):
        rows.append(
            {
                "unit_id": f"u{i}",
                "strategy": "isolated",
                "conversation_id": c,
                "turn_index": t,
                "message_index": i,
                "doc_ids": [f"{c}:t{t}"],
                "role": role,
                "text": text,
                "n_tokens": 10,
                "chunk_ids": [f"k{i}"],
                "timestamp": NOW - timedelta(days=days),
            }
        )
    units = schema.frame(rows, schema.UNITS)
    emb = HashEmbedder(256)
    idx = VectorIndex.build(units, embed_texts(units["text"].to_list(), emb), model_id=emb.model_id)
    return idx, emb, BM25Index.build(units)


def test_best_unit_per_doc(setup) -> None:  # type: ignore[no-untyped-def]
    idx, emb, _ = setup
    hits = search(idx, "nginx websocket upgrade header", 10, embedder=emb)
    assert hits["doc_id"].is_unique().all()
    assert hits["rank"].to_list() == list(range(1, hits.height + 1))
    assert hits["doc_id"][0] == "c1:t0"
    # c1:t0 has two units; its score is the better one's cosine
    q = emb.encode(["nginx websocket upgrade header"])[0]
    best = max(q @ idx.vectors(np.array([0, 1])).T)
    assert hits["score"][0] == pytest.approx(best, abs=1e-6)
    assert list(hits.columns) == list(schema.HITS)  # every column declared


def test_filters_and_scope(setup) -> None:  # type: ignore[no-untyped-def]
    idx, emb, _ = setup
    only_c2 = search(
        idx, "index", 10, embedder=emb, options=SearchOptions.of(conversations=("c2",))
    )
    assert set(only_c2["conversation_id"]) == {"c2"}
    users = search(idx, "websocket", 10, embedder=emb, options=SearchOptions.of(roles=("user",)))
    assert set(users["role"]) == {"user"}
    recent = search(
        idx, "websocket", 10, embedder=emb, options=SearchOptions.of(since=NOW - timedelta(days=5))
    )
    assert set(recent["conversation_id"]) <= {"c2", "c3"}
    none = search(idx, "x", 10, embedder=emb, options=SearchOptions.of(conversations=("zz",)))
    assert none.height == 0
    q = pl.DataFrame(
        {"query_id": ["a", "b"], "text": ["websocket", "index"], "conversation_id": ["c3", "c2"]}
    )
    many = search_many(idx, q, embedder=emb, scoped=True)
    assert dict(many.group_by("query_id").agg(pl.col("conversation_id").unique()).iter_rows()) == {
        "a": ["c3"],
        "b": ["c2"],
    }


def test_hybrid_and_lexical(setup) -> None:  # type: ignore[no-untyped-def]
    idx, emb, bm25 = setup
    with pytest.raises(ValueError, match="BM25 index"):
        search(idx, "x", embedder=emb, options=SearchOptions.of(retrieval=Retrieval.HYBRID))
    lex = search(
        idx,
        "invalid index rebuild",
        3,
        embedder=emb,
        options=SearchOptions.of(retrieval=Retrieval.LEXICAL),
        bm25=bm25,
    )
    assert lex["doc_id"][0] == "c2:t1"
    hyb = search(
        idx,
        "invalid index rebuild",
        3,
        embedder=emb,
        options=SearchOptions.of(retrieval=Retrieval.HYBRID),
        bm25=bm25,
    )
    # the doc first in both rankings gets 1/61 + 1/61
    assert hyb["doc_id"][0] == "c2:t1"
    assert hyb["score"][0] == pytest.approx(2 / 61)


def test_recency_reorders_close_scores(setup) -> None:  # type: ignore[no-untyped-def]
    idx, emb, _ = setup
    plain = search(idx, "websocket timeout", 5, embedder=emb)
    boosted = search(
        idx, "websocket timeout", 5, embedder=emb, options=SearchOptions.of(recency=True, now=NOW)
    )
    s_plain = dict(zip(plain["doc_id"], plain["score"], strict=True))
    s_boost = dict(zip(boosted["doc_id"], boosted["score"], strict=True))
    # c3 is 2 days old: x (1 + 0.2 * (1 - 2/14)); c1 is 20 days old: unchanged
    assert s_boost["c3:t0"] == pytest.approx(s_plain["c3:t0"] * (1 + 0.2 * 12 / 14))
    assert s_boost["c1:t1"] == pytest.approx(s_plain["c1:t1"])


def test_hierarchical_floor(setup) -> None:  # type: ignore[no-untyped-def]
    idx, emb, _ = setup
    hits = search(
        idx,
        "postgres index concurrently",
        10,
        embedder=emb,
        options=SearchOptions.of(hierarchical=True, top_conversations=1),
    )
    assert set(hits["conversation_id"]) == {"c2"}
    none = search(
        idx,
        "postgres index",
        10,
        embedder=emb,
        options=SearchOptions.of(hierarchical=True, conversation_floor=0.99),
    )
    assert none.height == 0


def test_options_validation() -> None:
    with pytest.raises(ValueError, match="k must be"):
        SearchOptions.of(k=0)
    with pytest.raises(ValueError, match="side must be"):
        SearchOptions.of(side="middle")


def test_bm25_against_hand_computation() -> None:
    # 3 docs; query "cat". bm25s (Lucene): idf = ln(1 + (N - df + 0.5) / (df + 0.5)),
    # tf part = tf / (tf + k1 * (1 - b + b * dl / avgdl)) (Lucene drops (k1 + 1)), k1 1.5, b 0.75.
    units = schema.frame(
        [
            {"unit_id": f"u{i}", "text": t, "doc_ids": [f"d{i}"], "chunk_ids": []}
            for i, t in enumerate(["cat sat mat", "dog ran", "cat cat dog"])
        ],
        schema.UNITS,
    )
    bm = BM25Index.build(units)
    # stemmed, stopword-free lengths: 3, 2, 3 -> avgdl 8/3; df(cat) = 2
    idf = np.log(1 + (3 - 2 + 0.5) / (2 + 0.5))

    def tf(t: int, dl: int) -> float:
        return t / (t + 1.5 * (0.25 + 0.75 * dl / (8 / 3)))

    assert bm.scores("cat").tolist() == pytest.approx(
        [idf * tf(1, 3), 0.0, idf * tf(2, 3)], rel=1e-5
    )


def test_search_haystacks_scopes_each_query(setup) -> None:  # type: ignore[no-untyped-def]
    idx, emb, bm25 = setup
    queries = pl.DataFrame(
        {"query_id": ["a", "b", "c"], "text": ["websocket timeout", "index", "websocket"]}
    )
    haystacks = pl.DataFrame(
        {"query_id": ["a", "a", "b"], "conversation_id": ["c1", "c3", "c2"]}
    )  # c has no haystack: it searches nothing
    for mode in Retrieval:
        opts = SearchOptions.of(retrieval=mode)
        hits = search_haystacks(idx, queries, haystacks, embedder=emb, options=opts, bm25=bm25)
        assert list(hits.columns) == list(schema.HITS)
        got = dict(hits.group_by("query_id").agg(pl.col("conversation_id").unique()).iter_rows())
        assert set(got) <= {"a", "b"}
        assert set(got["a"]) <= {"c1", "c3"}
        # a haystack of one conversation is LoCoMo's per-conversation scope: the same hits
        one = search_many(
            idx,
            queries.filter(pl.col("query_id") == "b").with_columns(conversation_id=pl.lit("c2")),
            embedder=emb,
            options=opts,
            bm25=bm25,
            scoped=True,
        )
        assert hits.filter(pl.col("query_id") == "b").equals(one)
    dense = search_haystacks(idx, queries, haystacks, embedder=emb)
    assert set(dense.filter(pl.col("query_id") == "a")["doc_id"]) == {"c1:t0", "c1:t1", "c3:t0"}


def test_scoped_queries_in_any_order_get_each_its_own_search(setup) -> None:  # type: ignore[no-untyped-def]
    idx, emb, _ = setup
    texts = ["websocket", "index", "nginx upgrade", "kubernetes ingress timeout", "rebuild"]
    convs = ["c3", "c2", "c1", "c3", "c2"]  # scopes interleaved: searched grouped, put back
    q = pl.DataFrame({"query_id": list("abcde"), "text": texts, "conversation_id": convs})
    many = search_many(idx, q, embedder=emb, scoped=True)
    assert many["query_id"].unique(maintain_order=True).to_list() == list("abcde")
    for qid, text, conv in zip("abcde", texts, convs, strict=True):
        alone = search(idx, text, embedder=emb, options=SearchOptions.of(conversations=(conv,)))
        assert (
            many.filter(pl.col("query_id") == qid).drop("query_id").equals(alone.drop("query_id"))
        )


def test_dense_search_in_a_scope_is_the_index_search_bit_for_bit(setup) -> None:  # type: ignore[no-untyped-def]
    from convlab.protocols import Query
    from convlab.retrieval.retrievers import DenseRetriever

    idx, emb, _ = setup
    dense = DenseRetriever(idx, emb)
    rows = np.array([0, 1, 3, 5], dtype=np.int64)
    for text in ["nginx websocket", "drop the index", "timeout"]:
        query = Query(text, emb.encode([text])[0].astype(np.float32))
        scores, found = idx.search(query.vector[None, :], 3, rows=rows)
        got = dense.search(query, 3, rows)  # the second and third reuse the gathered vectors
        assert got.rows.tolist() == found[0].tolist()
        assert got.scores.tolist() == scores[0].astype(np.float64).tolist()
    assert len(dense.search(query, 3, np.zeros(0, dtype=np.int64))) == 0


def _long_turn_index() -> tuple[VectorIndex, HashEmbedder, BM25Index]:
    """One turn of 900 units about websockets, then 7 one-unit turns, 3 of them about it too."""
    rows = []
    texts = [f"websocket timeout websocket timeout line {i}" for i in range(900)]
    docs = ["big:t0"] * 900
    for j in range(7):
        about = "websocket timeout proxy" if j < 3 else "postgres vacuum analyse"
        texts.append(f"{about} note {j}")
        docs.append(f"small{j}:t0")
    for i, (text, doc) in enumerate(zip(texts, docs, strict=True)):
        rows.append(
            {
                "unit_id": f"u{i}",
                "strategy": "isolated",
                "conversation_id": doc.split(":")[0],
                "turn_index": 0,
                "message_index": i,
                "doc_ids": [doc],
                "role": "assistant",
                "text": text,
                "n_tokens": 10,
                "chunk_ids": [f"k{i}"],
                "timestamp": NOW,
            }
        )
    units = schema.frame(rows, schema.UNITS)
    emb = HashEmbedder(256)
    idx = VectorIndex.build(units, embed_texts(units["text"].to_list(), emb), model_id=emb.model_id)
    return idx, emb, BM25Index.build(units)


@pytest.mark.parametrize("mode", list(Retrieval))
def test_a_900_unit_turn_cannot_crowd_out_the_other_docs(mode: Retrieval) -> None:
    idx, emb, bm25 = _long_turn_index()
    # BM25 matches the long turn and 3 small ones; dense (and so hybrid) ranks all 8 docs
    matching = 4 if mode is Retrieval.LEXICAL else 8
    # the first 100 (= max(100, 10 k)) units fetched are all the long turn's: k docs still come
    for k in (1, 2, 4, 5, 8, 20):
        opts = SearchOptions.of(k=k, retrieval=mode)
        hits = search(idx, "websocket timeout", embedder=emb, options=opts, bm25=bm25)
        assert hits.height == min(k, matching)
        assert hits["doc_id"].is_unique().all()
        assert hits["doc_id"][0] == "big:t0"


def _dated_index(now: datetime) -> tuple[VectorIndex, HashEmbedder]:
    """Two one-unit docs with the same text, 7 and 20 days before ``now``."""
    units = schema.frame(
        [
            {
                "unit_id": f"u{i}",
                "strategy": "isolated",
                "conversation_id": f"c{i}",
                "turn_index": 0,
                "message_index": 0,
                "doc_ids": [f"c{i}:t0"],
                "role": "user",
                "text": "websocket timeout",
                "n_tokens": 3,
                "chunk_ids": [f"k{i}"],
                "timestamp": now - timedelta(days=days),
            }
            for i, days in enumerate((7, 20))
        ],
        schema.UNITS,
    )
    emb = HashEmbedder(64)
    idx = VectorIndex.build(units, embed_texts(units["text"].to_list(), emb), model_id=emb.model_id)
    return idx, emb


def test_recency_is_measured_from_now_or_the_given_time() -> None:
    today = datetime.now(UTC)
    idx, emb = _dated_index(today)
    plain = search(idx, "websocket timeout", 2, embedder=emb)
    cos = plain["score"][0]  # both docs hold the same text: the same cosine
    assert plain["score"].to_list() == pytest.approx([cos, cos])

    def boosted(now: datetime | None) -> dict[str, float]:
        opts = SearchOptions.of(recency=True, now=now)
        hits = search(idx, "websocket timeout", 2, embedder=emb, options=opts)
        return dict(zip(hits["doc_id"], hits["score"], strict=True))

    # from the time of the search: c0 is 7 days old, x (1 + 0.2 * (1 - 7/14)) = 1.1; c1 is 20
    # days old, past the 14-day horizon: x 1 (from the newest unit's time c0 would get 1.2)
    got = boosted(None)
    assert got["c0:t0"] == pytest.approx(cos * 1.1, rel=1e-4)
    assert got["c1:t0"] == pytest.approx(cos)
    # from a given time 10 days later: c0 is 17 days old (x 1), c1 30 (x 1)
    assert boosted(today + timedelta(days=10)) == pytest.approx({"c0:t0": cos, "c1:t0": cos})
    # from a time 10 days earlier: c0 is in the future (age 0: x 1.2), c1 10 days old:
    # x (1 + 0.2 * (1 - 10/14)) = 1.0571...
    got = boosted(today - timedelta(days=10))
    assert got == pytest.approx({"c0:t0": cos * 1.2, "c1:t0": cos * (1 + 0.2 * 4 / 14)})
