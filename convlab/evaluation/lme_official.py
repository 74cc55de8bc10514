"""LongMemEval's own retrieval protocol: its keys, its gold, its measures and its two averages.

What the official code does (xiaowu0162/LongMemEval, ``src/retrieval/run_retrieval.py`` and
``eval_utils.py``), per question and over that question's haystack only:

- **Keys** are user messages only. Turn granularity: each user message alone, keyed
  ``{session_id}_{i+1}`` (``i`` its index in the session, assistant messages counted). Session
  granularity: one key per session, its user messages joined by a space.
- **Gold**: a key is gold iff its id contains ``answer``. A user message of a session whose id
  contains ``answer`` keeps its id when it has ``has_answer: true`` and is renamed
  (``answer`` -> ``noans``) otherwise; a session whose user messages all lack ``has_answer`` is
  renamed likewise. So a question can have no gold at all.
- **Measures** at k, from a ranking of every key (:func:`measures_at`): ``recall_any@k`` (some
  gold key in the top k), ``recall_all@k`` (every gold key in the top k: 1.0 when there is no
  gold, as Python's ``all([])``) and ``ndcg_any@k`` (binary gains, DCG@k = rel_1 +
  Σ_{2<=i<=k} rel_i / log2(i), ideal DCG from the sorted relevances of the whole haystack; 0
  when the ideal is 0). k = 1, 3, 5, 10, 30, 50.
- **Turn -> session** (:func:`turn_to_session_at`): turn keys stripped of their ``_{i+1}``; k is
  widened until k distinct stripped ids are in the top ``effective_k`` (or the list ends), then
  the same measures over the stripped ids (every turn still counts: a gold session's turns all
  add gain, and a session with gold and non-gold turns is two ids, ``answer...`` and
  ``noans...``).
- **Two averages** (:func:`averages`): over the questions that are not abstention ones
  (``_abs`` in the id; ``print_retrieval_metrics.py``, n = 470 on oracle), and ``strict``
  (``run_retrieval.py``: also leaving out a question none of whose haystack's user messages has
  ``has_answer``; n = 419 on oracle).

Wu et al., "LongMemEval: Benchmarking Chat Assistants on Long-Term Interactive Memory", ICLR
2025. Frames in, frames out: :func:`read_official` reads the raw file into
:class:`OfficialLabels`; :func:`complete_rankings` turns a system's hits into rankings of every
key; :func:`official_measures` scores them per question.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import polars as pl

from convlab import schema
from convlab.errors import LoadError
from convlab.files import DATASET, read_regular

__all__ = [
    "AVERAGES",
    "KEYS",
    "KS",
    "LEVELS",
    "MEASURES",
    "QUESTIONS",
    "OfficialLabels",
    "averages",
    "complete_rankings",
    "in_average",
    "measures_at",
    "official_measures",
    "read_official",
    "turn_to_session_at",
    "with_doc_ids",
]

KS = (1, 3, 5, 10, 30, 50)
"""The cutoffs of the official code."""
MEASURES = ("recall_any", "recall_all", "ndcg_any")
"""The official measures, in the official code's order."""
LEVELS = ("turn", "session", "session_keys")
"""Turn level; session level from a ranking of turns (:func:`turn_to_session_at`, the official
turn2session); and ``session_keys``, the official session granularity, one key per session
(:func:`convlab.evaluation.lme_scores.session_key_rankings` for a system's ranking of turns,
the keys themselves for the flat BM25 reference): the level of the paper's session figures."""
AVERAGES = ("strict", "non_abstention")
"""The two averages: :func:`averages`."""

KEYS = {
    "query_id": pl.String,
    "position": pl.Int32,  # the key's place in the official corpus of the question (0-based)
    "session_id": pl.String,
    "message": pl.Int32,  # i + 1: the message's place in its session, assistants counted
    "key": pl.String,  # the official id (``noans`` where not gold)
    "gold": pl.Boolean,
    "text": pl.String,
}
"""One row per key of a question's haystack: a user message (turns) or a session (sessions),
in the order the official code lists them. Sessions have ``message`` null."""
QUESTIONS = {
    "query_id": pl.String,
    "question": pl.String,
    "category": pl.String,
    "abstention": pl.Boolean,  # ``_abs`` in the id
    "has_target": pl.Boolean,  # some user message of the haystack has ``has_answer``
}
"""One row per question, in the file's order."""


@dataclass(frozen=True, slots=True)
class OfficialLabels:
    """The official keys and gold of a LongMemEval file (:func:`read_official`).

    Attributes:
        questions: :data:`QUESTIONS`.
        turns: :data:`KEYS` at turn granularity (each user message alone).
        sessions: :data:`KEYS` at session granularity (a session's user messages joined).
    """

    questions: pl.DataFrame
    turns: pl.DataFrame
    sessions: pl.DataFrame

    def select(self, query_ids: Iterable[str]) -> OfficialLabels:
        """Only these questions."""
        keep = pl.col("query_id").is_in(list(query_ids))
        return OfficialLabels(
            self.questions.filter(keep), self.turns.filter(keep), self.sessions.filter(keep)
        )

    def strict(self) -> pl.DataFrame:
        """The query ids of the strict average (not abstention, some target)."""
        return self.questions.filter(~pl.col("abstention") & pl.col("has_target")).select(
            "query_id"
        )


def read_official(path: str | Path) -> OfficialLabels:
    """The official keys and gold of a LongMemEval file, read as the official code reads it.

    Raises:
        LoadError: naming the file, when it is not a list of questions with haystacks, or a
            question's haystack lists differ in length.

    Example:
        >>> labels = read_official("longmemeval_oracle.json")  # doctest: +SKIP
        >>> labels.strict().height  # doctest: +SKIP
        419
    """
    p = Path(path)
    try:
        items = orjson.loads(read_regular(p, limit=DATASET))
    except orjson.JSONDecodeError as exc:
        raise LoadError(p, 1, f"invalid JSON ({exc}); expected LongMemEval's questions") from None
    if not isinstance(items, list):
        raise LoadError(p, 1, "not a JSON list of LongMemEval questions")
    questions: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    sessions: list[dict[str, Any]] = []
    seen: set[str] = set()
    for n, item in enumerate(items):
        try:
            questions.append(_question(item, turns, sessions))
        except KeyError as exc:
            raise LoadError(p, 1, f"question {n}: {exc} missing") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise LoadError(p, 1, f"question {n}: malformed ({exc})") from None
        if questions[-1]["query_id"] in seen:
            raise LoadError(p, 1, f"question {n}: question_id {questions[-1]['query_id']!r} twice")
        seen.add(questions[-1]["query_id"])
    return OfficialLabels(pl.DataFrame(questions, schema=QUESTIONS), _keys(turns), _keys(sessions))


def _keys(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """:data:`KEYS` from the rows, each key's ``position`` counted inside its question."""
    schema = {c: t for c, t in KEYS.items() if c != "position"}
    frame = pl.DataFrame(rows, schema=schema)
    position = pl.int_range(pl.len(), dtype=pl.Int32).over("query_id").alias("position")
    return frame.with_columns(position).select(list(KEYS))


def _question(
    item: dict[str, Any], turns: list[dict[str, Any]], sessions: list[dict[str, Any]]
) -> dict[str, Any]:
    """One question's row; its turn and session keys appended to ``turns`` and ``sessions``."""
    qid = str(item["question_id"])
    ids, haystack = item["haystack_session_ids"], item["haystack_sessions"]
    if len(ids) != len(haystack):
        raise ValueError("haystack_session_ids and haystack_sessions differ in length")
    target = False
    for sid, session in zip(ids, haystack, strict=True):
        sid = str(sid)
        users = [(i, t) for i, t in enumerate(session) if t["role"] == "user"]
        answered = [t.get("has_answer") is True for _, t in users]
        target = target or any(answered)
        for (i, t), has in zip(users, answered, strict=True):
            key = f"{sid}_{i + 1}"
            if "answer" in sid and not has:
                key = key.replace("answer", "noans")
            turns.append(_key(qid, sid, i + 1, key, str(t["content"])))
        key = sid.replace("answer", "noans") if "answer" in sid and not any(answered) else sid
        text = " ".join(str(t["content"]) for _, t in users)
        sessions.append(_key(qid, sid, None, key, text))
    return {
        "query_id": qid,
        "question": str(item["question"]),
        "category": item.get("question_type"),
        "abstention": "_abs" in qid,
        "has_target": target,
    }


def _key(qid: str, sid: str, message: int | None, key: str, text: str) -> dict[str, Any]:
    return {
        "query_id": qid,
        "session_id": sid,
        "message": message,
        "key": key,
        "gold": "answer" in key,
        "text": text,
    }


def with_doc_ids(labels: OfficialLabels, messages: pl.DataFrame) -> OfficialLabels:
    """``labels`` with each turn key's ``doc_id``: the id of the message it is.

    LongMemEval's loader (:mod:`convlab.loaders.longmemeval`) gives every message the external
    id ``{session_id}_{i+1}``, the official key before renaming, in the conversation named by the
    session id: the two are joined on them, so the mapping is exact. A key whose message the
    loader left out (a malformed turn) gets a null ``doc_id``: no system can return it.

    Args:
        labels: from :func:`read_official`.
        messages: :data:`convlab.schema.MESSAGES` of the corpus read from the same file.
    """
    users = messages.filter(pl.col("role") == "user").select(
        pl.col("conversation_id").alias("session_id"),
        pl.col("external_id").alias("_raw"),
        schema.message_id_expr().alias("doc_id"),
    )
    turns = (
        labels.turns.with_columns(pl.format("{}_{}", "session_id", "message").alias("_raw"))
        .join(users, on=["session_id", "_raw"], how="left", maintain_order="left")
        .drop("_raw")
    )
    return OfficialLabels(labels.questions, turns, labels.sessions)


def _dcg(relevances: Sequence[float], k: int) -> float:
    """DCG@k as the official code computes it: rel_1 + Σ_{2<=i<=k} rel_i / log2(i)."""
    rel = np.asarray(relevances, dtype=np.float64)[:k]
    if rel.size:
        return float(rel[0] + np.sum(rel[1:] / np.log2(np.arange(2, rel.size + 1))))
    return 0.0


def measures_at(ranked: Sequence[str], correct: set[str], k: int) -> tuple[float, float, float]:
    """``(recall_any, recall_all, ndcg_any)`` at ``k`` of one ranking of every key.

    Args:
        ranked: the ids of every key of the haystack, best first (a ranking of the whole
            corpus, so its relevances are also the ideal ranking's).
        correct: the gold ids.
        k: the cutoff.

    Example:
        >>> measures_at(["a", "g1", "b", "g2"], {"g1", "g2"}, 2)
        (1.0, 0.0, 0.5)
        >>> measures_at(["a", "b"], set(), 1)  # no gold: recall_all is all([])
        (0.0, 1.0, 0.0)
    """
    top = set(ranked[:k])
    recall_any = float(any(doc in top for doc in correct))
    recall_all = float(all(doc in top for doc in correct))
    relevances = [1 if doc in correct else 0 for doc in ranked]
    ideal = _dcg(sorted(relevances, reverse=True), k)
    ndcg = 0.0 if ideal == 0 else _dcg(relevances[:k], k) / ideal
    return recall_any, recall_all, ndcg


def _strip(key: str) -> str:
    """A turn key's session part: ``answer_x_3`` -> ``answer_x`` (the official strip_turn_id)."""
    return "_".join(key.split("_")[:-1])


def turn_to_session_at(
    ranked: Sequence[str], correct: set[str], k: int
) -> tuple[float, float, float]:
    """:func:`measures_at` at session level from a ranking of turn keys (official turn2session).

    Each key loses its ``_{i+1}``; k widens until k distinct session ids are in the top
    ``effective_k``, or the list ends; the measures are then taken at ``effective_k`` over the
    stripped ids (one per turn, not one per session).

    Example:
        >>> turn_to_session_at(["s1_1", "s1_3", "answer_2_1"], {"answer_2_1"}, 1)
        (0.0, 0.0, 0.0)
        >>> turn_to_session_at(["s1_1", "s1_3", "answer_2_1"], {"answer_2_1"}, 2)
        (1.0, 1.0, 0.6309297535714575)
    """
    ids = [_strip(x) for x in ranked]
    gold = {_strip(x) for x in correct}
    effective_k, seen = k, set(ids[:k])
    while effective_k <= len(ids) and len(seen) < k:
        effective_k += 1
        seen.update(ids[effective_k - 1 : effective_k])  # nothing once past the end
    return measures_at(ids, gold, effective_k)


def complete_rankings(hits: pl.DataFrame, keys: pl.DataFrame) -> pl.DataFrame:
    """Each question's ranking of every key: the keys of its hits first, then the rest.

    The official code ranks every key of the haystack; a system returns its top docs only, so
    the keys it did not return follow, in haystack order (``position``). A doc returned twice
    counts at its first rank.

    Args:
        hits: ``query_id, rank, doc_id`` (:data:`convlab.schema.HITS`).
        keys: :data:`KEYS` with a ``doc_id`` column (null for a key no doc stands for).

    Returns:
        ``query_id, rank, key, gold``, ranks from 1, one row per key.

    Raises:
        ValueError: a hit's doc is none of its question's keys (not a user message of its
            haystack), naming it.
    """
    returned = hits.select("query_id", "rank", "doc_id").join(
        keys.select("query_id", "doc_id", "position").filter(pl.col("doc_id").is_not_null()),
        on=["query_id", "doc_id"],
        how="left",
    )
    stray = returned.filter(pl.col("position").is_null())
    if stray.height:
        q, d = stray.row(0)[0], stray["doc_id"][0]
        raise ValueError(
            f"{stray.height} hits are not official keys (user messages of their haystack); "
            f"the first: query {q!r}, doc {d!r}"
        )
    first = (
        returned.sort("query_id", "rank")
        .unique(["query_id", "position"], keep="first", maintain_order=True)
        .with_columns(pl.col("rank").cast(pl.Float64).alias("order"))
        .select("query_id", "position", "order")
    )
    big = float(np.iinfo(np.int32).max)
    return (
        keys.select("query_id", "position", "key", "gold")
        .join(first, on=["query_id", "position"], how="left")
        .with_columns(pl.col("order").fill_null(big + pl.col("position").cast(pl.Float64)))
        .sort("query_id", "order", maintain_order=True)
        .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("query_id").alias("rank"))
        .select("query_id", "rank", "key", "gold")
    )


def official_measures(
    rankings: pl.DataFrame, *, ks: Sequence[int] = KS, turns: bool = True
) -> pl.DataFrame:
    """The official measures of each question's ranking of every key.

    Args:
        rankings: ``query_id, rank, key, gold``: every key of each question
            (:func:`complete_rankings`, or a reference ranking).
        ks: the cutoffs.
        turns: the keys are turns: measure them at ``turn`` level and, through
            :func:`turn_to_session_at`, at ``session`` level; ``False``: the keys are sessions
            (``session`` level only).

    Returns:
        ``query_id, level, metric, value`` (metric ``recall_all@5``...), questions in order.
    """
    rows: list[tuple[str, str, str, float]] = []
    grouped = rankings.sort("query_id", "rank").group_by("query_id", maintain_order=True)
    for qid, ranked, gold in grouped.agg("key", "gold").iter_rows():
        correct = {k for k, g in zip(ranked, gold, strict=True) if g}
        levels = (
            (("turn", measures_at), ("session", turn_to_session_at))
            if turns
            else (("session", measures_at),)
        )
        for level, measure in levels:
            for k in ks:
                values = measure(ranked, correct, k)
                rows.extend(
                    (qid, level, f"{name}@{k}", v) for name, v in zip(MEASURES, values, strict=True)
                )
    return pl.DataFrame(
        rows,
        schema={
            "query_id": pl.String,
            "level": pl.String,
            "metric": pl.String,
            "value": pl.Float64,
        },
        orient="row",
    )


def averages(per_question: pl.DataFrame, questions: pl.DataFrame) -> pl.DataFrame:
    """The official means: over non-abstention questions, and ``strict`` (some target too).

    Args:
        per_question: ``query_id, level, metric, value`` and any grouping columns (``system``).
        questions: :data:`QUESTIONS`.

    Returns:
        the grouping columns, ``level, metric, average, mean, queries``; ``average`` is
        ``strict`` or ``non_abstention`` (:data:`AVERAGES`).
    """
    by = [c for c in per_question.columns if c not in ("query_id", "value")]
    parts = []
    for name, keep in _average_filters().items():
        ids = questions.filter(keep).select("query_id")
        parts.append(
            per_question.join(ids, on="query_id", how="semi")
            .group_by(by, maintain_order=True)
            .agg(pl.col("value").mean().alias("mean"), pl.len().alias("queries"))
            .with_columns(pl.lit(name).alias("average"))
        )
    return pl.concat(parts).select(*by, "average", "mean", "queries")


def _average_filters() -> dict[str, pl.Expr]:
    """Which questions each average keeps."""
    not_abs = ~pl.col("abstention")
    return {"strict": not_abs & pl.col("has_target"), "non_abstention": not_abs}


def in_average(per_question: pl.DataFrame, questions: pl.DataFrame, average: str) -> pl.DataFrame:
    """The rows of ``per_question`` whose question counts in ``average`` (:data:`AVERAGES`)."""
    keep = _average_filters()[average]
    return per_question.join(questions.filter(keep).select("query_id"), on="query_id", how="semi")
