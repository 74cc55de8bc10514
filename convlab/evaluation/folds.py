"""The one cross-validation rule: which queries stay together, and the folds they make.

A figure is *held out* when every choice it depends on (a weight, a parameter, a system, a
policy) was made on queries of other groups than the query it is measured on: a group is a
conversation where queries belong to conversations, the question itself where each question has
its own haystack (LongMemEval). Every grouped cross-validation of convlab splits by
:func:`groups` and :func:`splits`, and every run folder records the result (``groups.parquet``:
``query_id, group, fold``; ``config.json``'s ``groups``: :func:`record`).

:func:`groups` reads a query's conversation, in this order:

1. each question its own group where each has its own haystack (``haystacks=True``);
2. the conversation the query names (a queries frame's ``conversation_id``);
3. the id's prefix: LoCoMo's ``conv-26:q0`` is about ``conv-26``;
4. the conversations of its relevant docs (doc ids are ``conversation:unit``; the text before
   the last ``:``), as for the real sessions' ``rs-q001``, whose data names none.

Queries whose conversations overlap are one group (a query whose relevant docs lie in two
conversations joins them), so no conversation is ever on both sides of a split; the group is
named by its first conversation in sorted order. A query with no conversation (no relevant doc
to place it) is its own group. Folds are scikit-learn's ``GroupKFold`` (deterministic: groups
are dealt by size), at most :data:`FOLDS` and never more than there are groups.

Example:
    >>> qrels = pl.DataFrame({"query_id": ["rs-q1", "rs-q2", "rs-q2"],
    ...     "doc_id": ["c1:m2", "c1:m4", "c2:m1"], "relevance": [1, 1, 1]})
    >>> groups(["conv-26:q0", "rs-q1", "rs-q2", "rs-q3"], qrels)
    ['conv-26', 'c1', 'c1', 'rs-q3']
    >>> groups(["001be529", "002"], haystacks=True)
    ['001be529', '002']
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from convlab import defaults
from convlab.atomic import write_file_atomic

__all__ = [
    "FOLDS",
    "fold_frame",
    "groups",
    "query_folds",
    "record",
    "rule",
    "run_labels",
    "save",
    "splits",
]

FOLDS: int = defaults.FOLDS
"""The most folds of a grouped cross-validation (fewer when there are fewer groups)."""

Split = tuple[np.ndarray, np.ndarray]


def rule(*, haystacks: bool = False) -> str:
    """The name of the grouping :func:`groups` applies: ``question`` or ``conversation``."""
    return "question" if haystacks else "conversation"


def groups(
    query_ids: Sequence[str], labels: pl.DataFrame | None = None, *, haystacks: bool = False
) -> list[str]:
    """Each query's cross-validation group (the rule of this module's docstring).

    Args:
        query_ids: the queries, in any order.
        labels: a queries frame (``query_id``, ``conversation_id`` and/or ``relevant``, a list
            of doc ids) or qrels (``query_id, doc_id, relevance``: docs of relevance > 0 count).
        haystacks: each query has its own haystack (LongMemEval): each is its own group.
    """
    ids = list(query_ids)
    if haystacks:
        return ids
    named, docs = _labels(labels)
    convs: dict[str, list[str]] = {}
    for q in ids:
        head = q.rpartition(":")[0]
        own = named.get(q) or head
        convs[q] = [own] if own else sorted({c for d in docs.get(q, ()) if (c := _conv(d))})
    parent: dict[str, str] = {}

    def root(c: str) -> str:
        while parent.setdefault(c, c) != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    for cs in convs.values():
        for c in cs:
            a, b = root(cs[0]), root(c)
            if a != b:  # the sorted-first conversation names the group
                parent[max(a, b)] = min(a, b)
    return [root(convs[q][0]) if convs[q] else q for q in ids]


def _conv(doc_id: str) -> str:
    """A doc's conversation: the text before its last ``:`` ('' when it has none)."""
    return doc_id.rpartition(":")[0]


def _labels(labels: pl.DataFrame | None) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The conversation each query names, and each query's relevant doc ids."""
    if labels is None:
        return {}, {}
    named: dict[str, str] = {}
    if "conversation_id" in labels.columns:
        named = {
            q: c
            for q, c in labels.select("query_id", "conversation_id").iter_rows()
            if c is not None
        }
    docs: dict[str, list[str]] = {}
    if "relevant" in labels.columns:
        docs = {q: list(r or []) for q, r in labels.select("query_id", "relevant").iter_rows()}
    elif "doc_id" in labels.columns:
        score = "relevance" if "relevance" in labels.columns else "grade"
        for q, d in labels.filter(pl.col(score) > 0).select("query_id", "doc_id").iter_rows():
            docs.setdefault(q, []).append(d)
    return named, docs


def splits(
    group: Sequence[str], folds: int = FOLDS, *, labels: Sequence[bool] | None = None
) -> list[Split]:
    """The (train, test) row indexes of each fold: ``GroupKFold`` over ``group``.

    ``min(folds, number of groups)`` folds; a group is never in two folds. With ``labels`` (a
    classifier's classes, one per query) the folds are ``StratifiedGroupKFold``'s (unshuffled,
    so deterministic): the same groups kept whole, dealt so that each fold holds each class in
    about its share, so no training fold lacks a rare class.

    Raises:
        ValueError: fewer than 2 groups.
    """
    from sklearn.model_selection import GroupKFold, StratifiedGroupKFold

    n = min(folds, len(set(group)))
    if n < 2:
        raise ValueError(f"{len(set(group))} query groups cannot make 2 folds")
    x = np.zeros(len(group))
    if labels is not None:
        y = np.asarray(labels, dtype=bool)
        return list(StratifiedGroupKFold(n_splits=n).split(x, y, groups=list(group)))
    return list(GroupKFold(n_splits=n).split(x, groups=list(group)))


def fold_frame(query_ids: Sequence[str], group: Sequence[str], folds: int = FOLDS) -> pl.DataFrame:
    """``query_id, group, fold``: each query's group and fold (:func:`splits`).

    ``fold`` is null for every query when there are fewer than 2 groups.
    """
    fold: list[int | None] = [None] * len(group)
    if len(set(group)) >= 2:
        for i, (_, test) in enumerate(splits(group, folds)):
            for t in test:
                fold[t] = i
    return pl.DataFrame(
        {"query_id": list(query_ids), "group": list(group), "fold": fold},
        schema={"query_id": pl.String, "group": pl.String, "fold": pl.Int64},
    )


def query_folds(
    queries: pl.DataFrame, *, haystacks: bool = False, folds: int = FOLDS
) -> pl.DataFrame:
    """``query_id, group, fold`` of every labelled query, as a run folder records them.

    The folds split the judged queries (a ``relevant`` doc or more), as a tuned system's
    cross-validation does (:func:`convlab.evaluation.multiview.tuned_hits`); an unjudged query
    is in no fold (``fold`` null).

    Args:
        queries: ``query_id``, ``conversation_id``, ``relevant``.
        haystacks: each query has its own haystack.
        folds: the most folds.
    """
    ids = queries["query_id"].to_list()
    group = groups(ids, queries, haystacks=haystacks)
    judged = [len(r or []) > 0 for r in queries["relevant"].to_list()]
    split = fold_frame(
        [q for q, j in zip(ids, judged, strict=True) if j],
        [g for g, j in zip(group, judged, strict=True) if j],
        folds,
    )
    every = pl.DataFrame(
        {"query_id": ids, "group": group}, schema={"query_id": pl.String, "group": pl.String}
    )
    return every.join(
        split.select("query_id", "fold"), on="query_id", how="left", maintain_order="left"
    )


def record(frame: pl.DataFrame, *, haystacks: bool = False) -> dict[str, Any]:
    """What ``config.json`` says of a run's groups: the rule, the groups, the folds, the queries.

    ``frame``: a :func:`fold_frame`; only its rows with a fold count.
    """
    split = frame.filter(pl.col("fold").is_not_null())
    return {
        "rule": rule(haystacks=haystacks),
        "groups": split["group"].n_unique(),
        "folds": split["fold"].n_unique(),
        "queries": split.height,
    }


def save(out: Path, frame: pl.DataFrame, *, haystacks: bool = False) -> dict[str, Any]:
    """Write ``frame`` (:func:`fold_frame`) as ``out/groups.parquet``; return its :func:`record`."""
    out.mkdir(parents=True, exist_ok=True)
    write_file_atomic(out / "groups.parquet", frame.write_parquet)
    return record(frame, haystacks=haystacks)


def run_labels(folder: Path) -> tuple[pl.DataFrame | None, bool]:
    """What :func:`groups` reads of an ``eval.run`` folder: its qrels and whether it has haystacks.

    The qrels are ``qrels.txt`` (None when the folder keeps none); ``haystacks`` is
    ``config.json``'s ``data.haystacks``.
    """
    from convlab.evaluation.queries import read_qrels

    config = folder / "config.json"
    record = json.loads(config.read_text(encoding="utf-8")) if config.is_file() else {}
    data = record.get("data", {}) if isinstance(record, dict) else {}
    haystacks = bool(data.get("haystacks")) if isinstance(data, dict) else False
    qrels = read_qrels(folder / "qrels.txt") if (folder / "qrels.txt").is_file() else None
    return qrels, haystacks
