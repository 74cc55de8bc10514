"""LongMemEval (Wu et al., ICLR 2025; MIT): user/assistant chat histories with labelled questions.

The published files (``longmemeval_s.json``, ``_m``, ``_oracle``) are a JSON list of questions,
each with its own haystack: ``question_id`` (ending ``_abs`` for abstention questions),
``question_type``, ``question``, ``answer``, ``question_date``, ``haystack_session_ids``,
``haystack_dates``, ``haystack_sessions`` (each a list of ``{role, content, has_answer?}`` turns)
and ``answer_session_ids``. convlab never downloads them: pass the path of a file you have.

Haystacks overlap between questions, so each distinct session id becomes one conversation
(``conversation_id`` = the session id, ``kind="chat"``, every message stamped with the session's
date), read once; a later copy of a session must hold the same roles and texts (else it is
reported). Each question becomes a labelled query (``conversation_id`` null: its scope is its
haystack, given apart by :func:`read_longmemeval`) whose ``relevant`` are the ids of the messages
marked ``has_answer: true`` *in that question's copy* of the session; abstention questions get
no relevant docs (they are not scored on retrieval) and are counted.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from convlab import schema
from convlab.errors import LoadError
from convlab.files import DATASET, read_regular
from convlab.loaders.base import CorpusBuilder, question_problem
from convlab.loaders.blocks import BlockRow
from convlab.loaders.corpus import Corpus
from convlab.loaders.registry import register_format
from convlab.loaders.times import parse_time

__all__ = ["LongMemEvalLabels", "parse_haystack_date", "read_longmemeval"]

_EXPECTED = (
    "a LongMemEval JSON list of questions with question_id, question, answer, "
    "haystack_session_ids, haystack_dates, haystack_sessions and answer_session_ids"
)
_ITEM_TYPES: dict[str, type | tuple[type, ...]] = {
    "question_id": str,
    "question": str,
    "haystack_session_ids": list,
    "haystack_dates": list,
    "haystack_sessions": list,
}
_WEEKDAY = re.compile(r"\s*\([A-Za-z]{3}\)\s*")


def parse_haystack_date(value: Any) -> datetime | None:
    """``"2023/05/20 (Sat) 02:21"`` (LongMemEval's form) or ISO 8601, as UTC; else ``None``."""
    if isinstance(value, str):
        s = _WEEKDAY.sub(" ", value).strip()
        for fmt in ("%Y/%m/%d %H:%M", "%Y/%m/%d"):
            try:
                return datetime.strptime(s, fmt).replace(tzinfo=UTC)
            except ValueError:
                continue
    return parse_time(value)


@dataclass(frozen=True, slots=True)
class LongMemEvalLabels:
    """The labels of a LongMemEval file, beside its corpus.

    Attributes:
        queries: :data:`convlab.schema.QUERIES`; ``relevant`` are message ids (``has_answer``).
        haystacks: ``query_id, conversation_id``: one row per session of each question's haystack.
        sessions: ``query_id, relevant``: the ``answer_session_ids`` (session-level relevance).
        report: counts: questions, abstention, sessions (distinct), session_copies, answer_turns,
            questions_without_answer_turn, answer_sessions_outside_haystack.
        times: ``query_id, time``: when each question was asked (its ``question_date``; null
            where it has none or it cannot be read), what relative times in it are read from.
    """

    queries: pl.DataFrame
    haystacks: pl.DataFrame
    sessions: pl.DataFrame
    report: dict[str, int]
    times: pl.DataFrame | None = None


@register_format(priority=60)
class LongMemEvalReader:
    """Reader for LongMemEval's question files (the chat sessions and their questions)."""

    name = "longmemeval"

    def sniff(self, path: Path, head: bytes) -> bool:
        """A JSON list whose items have ``question_id`` and a haystack."""
        return (
            path.suffix.lower() == ".json"
            and head.lstrip().startswith(b"[")
            and b'"question_id"' in head
            and b'"haystack_' in head
        )

    def companion(self, path: Path) -> bool:
        """No side files."""
        return False

    def read(self, path: Path, builder: CorpusBuilder) -> int:
        """Read every session once and every question (haystacks: :func:`read_longmemeval`)."""
        try:
            _read(path, builder)
        except LoadError as exc:
            builder.skip(path, exc.line, exc.reason)  # raises again in strict mode
        return 1


class _Session:
    """A session read already: a digest of its turns, and the message index of each turn."""

    __slots__ = ("digest", "index")

    def __init__(self, digest: bytes, index: list[int | None]) -> None:
        self.digest = digest
        self.index = index


def _digest(turns: list[Any]) -> bytes:
    pairs = [[t.get("role"), t.get("content")] if isinstance(t, dict) else t for t in turns]
    return hashlib.blake2b(orjson.dumps(pairs), digest_size=16).digest()


def _read(
    path: Path, builder: CorpusBuilder
) -> tuple[list[list[str]], list[list[str]], Counter, list[datetime | None]]:
    """Read the file into ``builder``; each question's haystack, answer sessions and time."""
    try:
        items = orjson.loads(read_regular(path, limit=DATASET))
    except orjson.JSONDecodeError as exc:
        raise LoadError(path, 1, f"invalid JSON ({exc}); expected {_EXPECTED}") from None
    if not isinstance(items, list) or not items:
        raise LoadError(path, 1, f"not a non-empty JSON list; expected {_EXPECTED}")
    seen: dict[str, _Session] = {}
    asked: set[str] = set()
    haystacks: list[list[str]] = []
    answers: list[list[str]] = []
    asked_at: list[datetime | None] = []
    counts: Counter[str] = Counter()
    for i, item in enumerate(items):
        items[i] = None  # what is read can go: the whole file need not stay in memory
        problem = _check(item)
        if problem:
            qid = item.get("question_id") if isinstance(item, dict) else None
            builder.skip(path, 1, f"question {i} ({qid}): {problem}; expected {_EXPECTED}")
            continue
        qid = item["question_id"]
        if qid in asked:
            builder.skip(path, 1, f"question {i}: question_id {qid!r} given twice")
            continue
        asked.add(qid)
        relevant: list[str] = []
        haystack: list[str] = []
        for sid, date, turns in zip(
            item["haystack_session_ids"],
            item["haystack_dates"],
            item["haystack_sessions"],
            strict=True,
        ):
            sid = str(sid)
            haystack.append(sid)
            counts["session_copies"] += 1
            session = seen.get(sid)
            if session is None:
                session = seen[sid] = _session(path, builder, qid, sid, date, turns)
            elif session.digest != _digest(turns):
                builder.skip(path, 1, f"question {qid}: session {sid} differs from its first copy")
            for j, turn in enumerate(turns):
                if isinstance(turn, dict) and turn.get("has_answer") is True:
                    m = session.index[j] if j < len(session.index) else None
                    if m is not None:
                        relevant.append(schema.message_id(sid, m))
        abstention = qid.endswith("_abs")
        counts["questions"] += 1
        counts["abstention"] += abstention
        counts["answer_turns"] += 0 if abstention else len(relevant)
        counts["questions_without_answer_turn"] += not abstention and not relevant
        raw_answers = item.get("answer_session_ids") or []
        answer_sessions = [str(s) for s in raw_answers] if not abstention else []
        counts["answer_sessions_outside_haystack"] += len(set(answer_sessions) - set(haystack))
        answer = item.get("answer")
        builder.query(
            query_id=qid,
            text=item["question"],
            conversation_id=None,
            relevant=[] if abstention else relevant,
            category=str(item.get("question_type")) if item.get("question_type") else None,
            answer=None if answer is None else str(answer),
        )
        haystacks.append(haystack)
        answers.append(answer_sessions)
        asked_at.append(parse_haystack_date(item.get("question_date")))
    counts["sessions"] = len(seen)
    return haystacks, answers, counts, asked_at


def _check(item: Any) -> str | None:
    """What is wrong with a question item, or ``None``."""
    if not isinstance(item, dict):
        return "not an object"
    for key, kind in _ITEM_TYPES.items():
        if not isinstance(item.get(key), kind):
            return f"{key!r} missing or not a {getattr(kind, '__name__', kind)}"
    if (problem := question_problem(item["question"])) is not None:
        return problem
    if not all(isinstance(s, str) for s in item["haystack_session_ids"]):
        return "a haystack session id is not a string"
    answers = item.get("answer_session_ids")
    if answers is not None and not (
        isinstance(answers, list) and all(isinstance(s, str) for s in answers)
    ):
        return "'answer_session_ids' is not a list of strings"
    n = len(item["haystack_session_ids"])
    if len(item["haystack_dates"]) != n or len(item["haystack_sessions"]) != n:
        return "haystack_session_ids, haystack_dates and haystack_sessions differ in length"
    if not all(isinstance(s, list) for s in item["haystack_sessions"]):
        return "a haystack session is not a list of turns"
    return None


def _session(
    path: Path, builder: CorpusBuilder, qid: str, sid: str, date: Any, turns: list[Any]
) -> _Session:
    """Add one session as a conversation; map each turn to its message index."""
    when = parse_haystack_date(date)
    if when is None:
        builder.skip(path, 1, f"question {qid}: session {sid} has a date not understood: {date!r}")
    builder.conversation(sid, source_format=LongMemEvalReader.name, source_path=path, title=sid)
    index: list[int | None] = []
    for j, turn in enumerate(turns):
        role = turn.get("role") if isinstance(turn, dict) else None
        content = turn.get("content") if isinstance(turn, dict) else None
        if role not in ("user", "assistant") or not isinstance(content, str):
            builder.skip(path, 1, f"session {sid} turn {j}: needs role user|assistant and content")
            index.append(None)
            continue
        index.append(
            builder.message(
                sid,
                role,
                [BlockRow("text", content)],
                source_path=path,
                source_line=1,
                timestamp=when,
                is_real_user=role == "user",
                session_index=None,
                external_id=f"{sid}_{j + 1}",
            )
        )
    return _Session(_digest(turns), index)


def read_longmemeval(path: str | Path, *, strict: bool = False) -> tuple[Corpus, LongMemEvalLabels]:
    """A LongMemEval file as a corpus (one conversation per distinct session) and its labels.

    Raises:
        LoadError: naming the file, when it is not a LongMemEval list, or (strict mode) at the
            first bad question, turn or date, or a session whose copies differ.

    Example:
        >>> corpus, labels = read_longmemeval("longmemeval_s.json")  # doctest: +SKIP
        >>> labels.report["questions"]  # doctest: +SKIP
        500
    """
    p = Path(path)
    builder = CorpusBuilder(strict=strict)
    haystacks, answers, counts, asked_at = _read(p, builder)
    builder.file_done(p, LongMemEvalReader.name, 1)
    corpus = builder.build()
    queries = corpus.queries if corpus.queries is not None else schema.empty(schema.QUERIES)
    qids = queries["query_id"].to_list()
    hay = pl.DataFrame(
        {
            "query_id": [q for q, h in zip(qids, haystacks, strict=True) for _ in h],
            "conversation_id": [s for h in haystacks for s in h],
        },
        schema={"query_id": pl.String, "conversation_id": pl.String},
    )
    sessions = pl.DataFrame(
        {"query_id": qids, "relevant": answers},
        schema={"query_id": pl.String, "relevant": pl.List(pl.String)},
    )
    report = {
        k: counts[k]
        for k in (
            "questions",
            "abstention",
            "sessions",
            "session_copies",
            "answer_turns",
            "questions_without_answer_turn",
            "answer_sessions_outside_haystack",
        )
    }
    times = pl.DataFrame(
        {"query_id": qids, "time": asked_at},
        schema={"query_id": pl.String, "time": schema.UTC_TIME},
    )
    return corpus, LongMemEvalLabels(queries, hay, sessions, report, times)
