"""Training triples for the fine-tuned MiniLM, and the folds by conversation they come from.

A triple is (question, an evidence unit, a BM25 hard negative): the positive is the ``message``
unit of each doc the question's labels name, the negative the best-ranked doc of BM25 over the
same conversation's ``message`` units that is not evidence (so one triple per evidence doc).
:func:`conversation_folds` splits the conversations as the grouped CV of
:mod:`convlab.evaluation.tune` does (:mod:`convlab.evaluation.folds` over the scored queries),
and :func:`training_triples` takes the queries of the training conversations
only; :func:`check_no_leak` refuses triples that hold a test query or a test conversation's text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from convlab.embed.finetune import Triple
from convlab.evaluation import folds as cv_folds

__all__ = ["Fold", "TrainingSet", "check_no_leak", "conversation_folds", "training_triples"]


@dataclass(frozen=True, slots=True)
class Fold:
    """One fold: the conversations trained on and those held out (sorted)."""

    index: int
    folds: int
    train: tuple[str, ...]
    test: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TrainingSet:
    """A fold's triples and where each came from (query id, conversation, positive, negative)."""

    triples: list[Triple]
    query_ids: list[str]
    conversations: list[str]
    positives: list[str]
    negatives: list[str]


def conversation_folds(query_ids: Sequence[str], folds: int) -> list[Fold]:
    """The folds of the grouped CV: :func:`convlab.evaluation.folds.splits` of the queries' groups.

    The same split as :func:`convlab.evaluation.tune.cross_validate` makes for these query ids
    (in this order), so a fold's test conversations are the ones its fusion weights never saw.

    Raises:
        ValueError: fewer conversations than folds, or fewer than 2 folds.
    """
    if folds < 2:
        raise ValueError(f"{folds} folds; at least 2 are needed")
    groups = cv_folds.groups(query_ids)
    if len(set(groups)) < folds:
        raise ValueError(f"{len(set(groups))} conversations cannot make {folds} folds")
    split = cv_folds.splits(groups, folds)
    out = []
    for k, (train, test) in enumerate(split):
        out.append(
            Fold(
                k,
                folds,
                tuple(sorted({groups[i] for i in train})),
                tuple(sorted({groups[i] for i in test})),
            )
        )
    return out


def training_triples(
    queries: pl.DataFrame,
    units: pl.DataFrame,
    bm25_hits: pl.DataFrame,
    conversations: Sequence[str],
) -> TrainingSet:
    """The triples of the queries scoped to ``conversations`` (a fold's training ones).

    Args:
        queries: :data:`convlab.schema.QUERIES` (``relevant`` doc ids).
        units: the ``message`` units (:data:`convlab.schema.UNITS`: ``doc_ids``, ``text``).
        bm25_hits: BM25 over the ``message`` units, each query inside its conversation
            (``query_id, doc_id, rank``).
        conversations: only queries of these conversations are used.

    A query with no evidence unit, or no BM25 hit outside its evidence, gives no triple.
    """
    keep = set(conversations)
    text_of = dict(
        zip(
            units["doc_ids"].list.first().to_list(),
            units["text"].to_list(),
            strict=True,
        )
    )
    ranked = (
        bm25_hits.sort("query_id", "rank").group_by("query_id", maintain_order=True).agg("doc_id")
    )
    hits_of = dict(zip(ranked["query_id"].to_list(), ranked["doc_id"].to_list(), strict=True))
    triples, qids, convs, pos, neg = [], [], [], [], []
    for q in queries.iter_rows(named=True):
        if q["conversation_id"] not in keep:
            continue
        relevant = set(q["relevant"] or [])
        negative = next((d for d in hits_of.get(q["query_id"], []) if d not in relevant), None)
        if negative is None or negative not in text_of:
            continue
        for doc in q["relevant"] or []:
            if doc not in text_of:
                continue
            triples.append(Triple(q["text"], text_of[doc], text_of[negative]))
            qids.append(q["query_id"])
            convs.append(q["conversation_id"])
            pos.append(doc)
            neg.append(negative)
    return TrainingSet(triples, qids, convs, pos, neg)


def check_no_leak(
    training: TrainingSet, fold: Fold, queries: pl.DataFrame, units: pl.DataFrame
) -> None:
    """Refuse a training set that holds anything of the fold's test conversations.

    Checked from the data, not from how the set was made: no triple's query id, conversation,
    positive or negative doc is of a test conversation, and no triple's query text is the text
    of a test query, nor its positive or negative the text of a test conversation's unit.

    Raises:
        ValueError: naming the first thing of the test fold found in the training set.
    """
    test = set(fold.test)
    test_queries = queries.filter(pl.col("conversation_id").is_in(list(test)))
    test_ids = set(test_queries["query_id"].to_list())
    test_texts = set(test_queries["text"].to_list())
    test_units = set(units.filter(pl.col("conversation_id").is_in(list(test)))["text"].to_list())
    doc_conv = {d: c for d, c in zip(training.positives, training.conversations, strict=True)}
    for i, t in enumerate(training.triples):
        qid, conv = training.query_ids[i], training.conversations[i]
        docs = (training.positives[i], training.negatives[i])
        if qid in test_ids or conv in test or t.query in test_texts:
            raise ValueError(f"fold {fold.index}: training query {qid} is a test query")
        if any(d.rpartition(":")[0] in test for d in docs) or doc_conv[docs[0]] in test:
            raise ValueError(f"fold {fold.index}: training doc of {qid} is in a test conversation")
        if t.positive in test_units or t.negative in test_units:
            raise ValueError(f"fold {fold.index}: a training unit of {qid} is a test unit's text")
