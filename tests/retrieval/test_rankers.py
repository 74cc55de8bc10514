"""The ranker contract: ``(Candidates, RankContext) -> Candidates``, values worked by hand."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from convlab.protocols import Candidates, Query, RankContext, Ranker, Retriever
from convlab.retrieval import Retrieval, SearchOptions
from convlab.retrieval.options import doc_rankers
from convlab.retrieval.rankers import (
    MMR,
    RANKERS,
    BestPerDoc,
    Density,
    Recency,
    Session,
    SessionCap,
    TimeBoost,
    configs,
)
from convlab.retrieval.retrievers import DenseRetriever, LexicalRetriever

NOW = datetime(2026, 3, 1, tzinfo=UTC)


class Vectors:
    """A stand-in for the index: vectors by row."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.v = vectors

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        return self.v[rows]


def context(
    *,
    conversations: Sequence[str] = ("x", "x", "y", "y"),
    doc_ids: Sequence[Sequence[str]] = (["a"], ["a"], ["b"], ["b", "c"]),
    times: Sequence[datetime | None] | None = None,
    vectors: np.ndarray | None = None,
    now: datetime | None = NOW,
    k: int = 10,
) -> RankContext:
    n = len(conversations)
    return RankContext(
        query=Query("q", np.zeros(2, dtype=np.float32)),
        units=pl.DataFrame({"unit_id": [f"u{i}" for i in range(n)]}),
        conversation_of_row=np.array(conversations),
        times=list(times) if times is not None else [None] * n,
        doc_ids=[list(d) for d in doc_ids],
        index=Vectors(vectors if vectors is not None else np.eye(n, dtype=np.float32)),
        now=now,
        k=k,
    )


def test_candidates_check_their_shape_and_keep_docs_when_taken() -> None:
    with pytest.raises(ValueError, match="one score per row"):
        Candidates.of([1, 2], [0.5])
    with pytest.raises(ValueError, match="one doc per row"):
        Candidates.of([1, 2], [0.5, 0.4], ["a"])
    c = Candidates.of([7, 3, 5], [0.9, 0.8, 0.1], ["a", "b", "c"])
    assert c.rows.dtype == np.int64
    assert c.scores.dtype == np.float64
    t = c.take([2, 0])
    assert (t.rows.tolist(), t.scores.tolist(), t.docs) == ([5, 7], [0.1, 0.9], ("c", "a"))
    assert len(c.take(slice(0, 2))) == 2


def test_recency_rescores_and_reranks() -> None:
    ctx = context(times=[NOW - timedelta(days=30), NOW, None, None])
    out = Recency()(Candidates.of([0, 1], [1.15, 1.0]), ctx)
    # row 1 is of age 0: 1.0 * 1.2 = 1.2 passes row 0 (30 days old, no boost: 1.15)
    assert out.rows.tolist() == [1, 0]
    assert out.scores.tolist() == pytest.approx([1.2, 1.15])
    undated = Recency()(Candidates.of([0, 1], [1.15, 1.0]), context(now=None))
    assert undated.rows.tolist() == [0, 1]
    assert undated.scores.tolist() == [1.15, 1.0]


def test_best_per_doc_by_hand() -> None:
    # rows: 0 -> a (0.5), 1 -> a (0.7), 2 -> b (0.6), 3 -> b and c (0.6)
    out = BestPerDoc()(Candidates.of([1, 2, 3, 0], [0.7, 0.6, 0.6, 0.5]), context())
    # a: row 1 (0.7); b: row 2 and 3 tie at 0.6, the first candidate wins; c: row 3
    assert out.docs == ("a", "b", "c")
    assert out.rows.tolist() == [1, 2, 3]
    assert out.scores.tolist() == [0.7, 0.6, 0.6]


def test_density_needs_docs_and_boosts_by_hand() -> None:
    with pytest.raises(ValueError, match="after best_per_doc"):
        Density()(Candidates.of([0], [1.0]), context())
    docs = Candidates.of([2, 0, 1], [1.0, 0.99, 0.98], ["d2", "d0", "d1"])
    out = Density()(docs, context(conversations=("x", "x", "y", "y")))
    # rows 0 and 1 are in x (2 docs: +5%), row 2 alone in y: x's docs pass it
    assert out.docs == ("d0", "d1", "d2")
    assert out.scores.tolist() == pytest.approx([0.99 * 1.05, 0.98 * 1.05, 1.0])


def test_mmr_ranker_reads_vectors_from_the_context() -> None:
    # test_search's MMR example: d0 and d1 near-duplicates, d2 different. Relevance z-scored:
    # mean 0.7833, sd 0.1312 -> 0.889, 0.508, -1.397. lambda 0.2: after d0, d1 scores
    # 0.2 * 0.508 - 0.8 * 0.995 = -0.694 and d2 0.2 * -1.397 - 0 = -0.279: d2
    v = np.array([[1.0, 0.0], [0.995, 0.0998], [0.0, 1.0]], dtype=np.float32)
    docs = Candidates.of([0, 1, 2], [0.9, 0.85, 0.6], ["d0", "d1", "d2"])
    ctx = context(conversations=("x", "x", "x"), doc_ids=(["d0"], ["d1"], ["d2"]), vectors=v, k=2)
    out = MMR(0.2)(docs, ctx)
    assert out.docs == ("d0", "d2")  # k = 2 picks
    with pytest.raises(ValueError, match=r"mmr lambda must be a number in \[0, 1\], not 1.5"):
        MMR(1.5)


def test_mmr_weighs_z_scored_relevance_whatever_the_scale() -> None:
    # scores 0.03, 0.02, 0.01 (RRF's scale) or 9, 6, 3 (BM25's): z-scores sqrt(1.5), 0,
    # -sqrt(1.5) (mean 2, sd sqrt(2/3), in units of the smaller). d0 and d1 near-duplicates
    # (cos 0.995), d2 apart. lambda 0.7: d0 first (0.7 sqrt(1.5)); then d1: 0 - 0.3 * 0.995
    # = -0.2985 beats d2: -0.7 sqrt(1.5) = -0.857; then d2: -0.857 - 0.3 * 0.0998.
    # On raw RRF scores the redundancy (0.3 * 0.995) would swamp relevance (0.7 * 0.02): d2
    # second.
    v = np.array([[1.0, 0.0], [0.995, 0.0998], [0.0, 1.0]], dtype=np.float32)
    ctx = context(conversations=("x", "x", "x"), doc_ids=(["d0"], ["d1"], ["d2"]), vectors=v, k=3)
    z = np.sqrt(1.5)
    for scores in ([0.03, 0.02, 0.01], [9.0, 6.0, 3.0]):
        out = MMR(0.7)(Candidates.of([0, 1, 2], scores, ["d0", "d1", "d2"]), ctx)
        assert out.docs == ("d0", "d1", "d2")
        assert out.scores.tolist() == pytest.approx(
            [0.7 * z, -0.3 * 0.995, -0.7 * z - 0.3 * 0.0998], abs=1e-6
        )
        assert out.scores.tolist() == sorted(out.scores.tolist(), reverse=True)


def test_registry_and_composition_follow_the_options() -> None:
    names = ("best_per_doc", "density", "mmr", "recency", "session", "session_cap", "temporal")
    assert RANKERS.names() == names
    assert all(isinstance(factory(), Ranker) for _, factory in RANKERS.items())
    with pytest.raises(ValueError, match="valid: " + ", ".join(names)):
        RANKERS.get("bm42")
    # the classes the options may hold: every ranker but the grouping, in the order they run
    assert [c.KEY for c in configs()] == [
        "session",
        "temporal",
        "recency",
        "density",
        "session_cap",
        "mmr",
    ]
    assert doc_rankers(SearchOptions()) == []  # grouping per doc is each view's, not a choice
    every = SearchOptions.of(
        retrieval="hybrid", recency=True, density=True, mmr=0.5, recency_days=7
    )
    assert doc_rankers(every) == [Recency(7.0, 0.2), Density(0.15), MMR(0.5)]
    mixed = every.replace(session={"weight": 0.25})
    assert doc_rankers(mixed)[0] == Session(weight=0.25)  # sessions first
    assert every.retrieval.mode is Retrieval.HYBRID
    more = every.replace(temporal={"boost": 2.0, "slack_days": 7}, session_cap=3)
    assert doc_rankers(more) == [
        TimeBoost(2.0, 7.0),
        Recency(7.0, 0.2),
        Density(0.15),
        SessionCap(3),
        MMR(0.5),
    ]


def test_the_options_hold_their_rankers_by_stage_whatever_order_they_are_given() -> None:
    given = SearchOptions(rankers=(MMR(0.0), Density(0.4), Recency()))  # lambda 0 is MMR on
    assert given.rankers == (Recency(), Density(0.4), MMR(0.0))
    assert given.ranker_names == ("recency", "density", "mmr")
    assert given == SearchOptions.of(recency=True, density=True, density_max=0.4, mmr=0.0)
    assert SearchOptions.of(mmr=0.3).ranker_names == ("mmr",)
    assert SearchOptions().ranker_names == ()
    # the flat form: each ranker under its KEY, as an experiment file writes it
    flat = given.as_dict()
    assert (flat["recency"], flat["recency_days"], flat["density_max"], flat["mmr"]) == (
        True,
        14.0,
        0.4,
        0.0,
    )
    assert (flat["session_cap"], flat["temporal"], flat["density"]) == (None, None, True)
    assert SearchOptions.from_dict(flat) == given
    with pytest.raises(ValueError, match="a ranker is given twice: mmr, mmr"):
        SearchOptions(rankers=(MMR(0.1), MMR(0.2)))
    with pytest.raises(ValueError, match="not a doc ranker of the options"):
        SearchOptions(rankers=(BestPerDoc(),))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"unknown search option.*mmx"):
        SearchOptions.of(mmx=0.5)


def test_retrieval_is_an_enum_with_a_clear_error() -> None:
    assert Retrieval("bm25") is Retrieval.LEXICAL
    assert SearchOptions.of(retrieval="lexical").retrieval.mode is Retrieval.LEXICAL
    with pytest.raises(ValueError, match="valid: dense, lexical, hybrid"):
        SearchOptions.of(retrieval="sparse")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="depth"):
        SearchOptions.of(depth=0)


def test_retrievers_return_candidates_best_first() -> None:
    from convlab import schema
    from convlab.embed import HashEmbedder, embed_texts
    from convlab.index import VectorIndex
    from convlab.index.bm25 import BM25Index

    texts = ["postgres index rebuild", "nginx websocket", "postgres vacuum"]
    units = schema.frame(
        [
            {"unit_id": f"u{i}", "text": t, "doc_ids": [f"d{i}"], "chunk_ids": []}
            for i, t in enumerate(texts)
        ],
        schema.UNITS,
    )
    emb = HashEmbedder(64)
    vectors = embed_texts(texts, emb)
    dense = DenseRetriever(VectorIndex.build(units, vectors, model_id=emb.model_id), emb)
    lexical = LexicalRetriever(BM25Index.build(units))
    assert isinstance(dense, Retriever)
    assert isinstance(lexical, Retriever)
    (q,) = dense.queries(["postgres"])
    got = dense.search(q, 3, None)
    cosine = vectors @ q.vector
    assert got.rows.tolist() == np.argsort(-cosine, kind="stable").tolist()
    assert got.scores.tolist() == pytest.approx(np.sort(cosine)[::-1].tolist(), abs=1e-6)
    inside = dense.search(q, 3, np.array([1, 2]))
    assert sorted(inside.rows.tolist()) == [1, 2]
    lex = lexical.search(q, 3, None)
    assert sorted(lex.rows.tolist()) == [0, 2]  # "nginx websocket" scores 0: left out


def _best_per_doc_reference(candidates: Candidates, doc_ids: list[list[str]]) -> Candidates:
    """BestPerDoc's rule written as the plain loop it replaces (the reference)."""
    best: dict[str, tuple[float, int]] = {}
    for row, score in zip(candidates.rows.tolist(), candidates.scores.tolist(), strict=True):
        for doc in doc_ids[row]:
            if doc not in best or score > best[doc][0]:
                best[doc] = (score, row)
    docs = sorted(best, key=lambda d: (-best[d][0], best[d][1]))
    return Candidates.of([best[d][1] for d in docs], [best[d][0] for d in docs], docs)


def test_best_per_doc_ties_and_many_doc_units_by_hand() -> None:
    # row 0 stands for docs b and a (in that order), row 2 for a; rows 0 and 1 tie at 0.5
    doc_ids = [["b", "a"], ["c"], ["a"], []]
    c = Candidates.of([1, 0, 2, 3], [0.5, 0.5, 0.5, 0.9])
    got = BestPerDoc()(c, context(conversations=["x"] * 4, doc_ids=doc_ids))
    # a doc's best unit: its first candidate among equal scores (row 0 for a, not row 2); equal
    # (score, row) pairs keep the order their docs were met (b before a); row 3 has no doc
    assert got.docs == ("b", "a", "c")
    assert got.rows.tolist() == [0, 0, 1]
    assert got.scores.tolist() == [0.5, 0.5, 0.5]


def test_best_per_doc_matches_the_plain_loop_on_random_candidates() -> None:
    rng = np.random.default_rng(7)
    for case in range(400):
        n = int(rng.integers(1, 30))
        many = case % 2 == 1  # units standing for 0..3 docs, or exactly one
        doc_ids = [
            [
                f"d{x}"
                for x in rng.choice(12, size=int(rng.integers(0, 4)) if many else 1, replace=False)
            ]
            for _ in range(n)
        ]
        rows = rng.choice(n, size=int(rng.integers(0, n + 1)), replace=False)
        c = Candidates.of(rows, rng.integers(0, 4, size=rows.size) / 4.0)  # many ties
        ctx = context(conversations=["x"] * n, doc_ids=doc_ids)
        got, want = BestPerDoc()(c, ctx), _best_per_doc_reference(c, doc_ids)
        assert got.docs == want.docs
        assert got.rows.tolist() == want.rows.tolist()
        assert got.scores.tolist() == want.scores.tolist()
