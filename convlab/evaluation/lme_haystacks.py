"""LongMemEval haystacks of any size from the oracle file: LongMemEval's own construction.

:func:`build_haystacks` (the command line: ``python -m eval.lme_haystacks --oracle
../shared/datasets/longmemeval/longmemeval_oracle.json --sessions 48 --seed 0 --out FILE``)
makes questions in LongMemEval's format (the schema of ``longmemeval_s.json``, read by
:mod:`convlab.loaders.longmemeval`) that keep their evidence sessions and get filler sessions up
to ``sessions`` per question. The S variant
(about 48 sessions per question, 277 MB) is not needed: its haystacks are made the same way,
evidence plus sessions that are not about the question.

The filler of a question is drawn, seeded, from the *other* questions' evidence sessions:

- the pool is every distinct session of the file (its first copy, in file order, with that
  copy's date), one per content: sessions whose turns (role, content) are equal count once,
  which matters because each abstention question (``_abs``) repeats its twin's sessions under
  other ids;
- a question's candidates are the pool less its own sessions, by id and by content (so a twin's
  copy of its evidence can never come back as filler holding the answer);
- each question draws from its own generator (``random.Random(f"{seed}:{question_id}")``),
  shuffling its candidates and taking the first ``sessions - evidence``: a question's filler
  depends on the seed and its id only, and the filler at N sessions is a prefix of the filler at
  any larger N (the haystacks of a cost curve are nested);
- a filler copy is not gold: its id has no ``answer`` in it (LongMemEval's protocol treats any
  session id holding ``answer`` as gold): ``answer`` becomes ``filler``
  (``answer_4be1b6b4_2`` -> ``filler_4be1b6b4_2``), an id without it gets ``filler_`` in front;
  the same session drawn into several questions has the one id; every ``has_answer`` is false;
- a filler keeps its own date (so a filler may be dated after the question: LongMemEval's S
  haystacks end before the question date; retrieval does not read dates, answering may);
- the sessions of a haystack are sorted by date (the oracle's own order breaks ties, evidence
  before filler), as LongMemEval's haystacks are chronological.

A question with more evidence sessions than ``--sessions`` keeps them all and gets no filler.
The file is written to a temporary name and renamed (whole or absent).
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

__all__ = ["build_haystacks", "filler_id", "read_questions", "write_haystacks"]

_NO_DATE = datetime.max.replace(tzinfo=UTC)


def filler_id(session_id: str) -> str:
    """The id of a session's filler copy: ``answer`` -> ``filler``, else ``filler_`` + id.

    Example:
        >>> filler_id("answer_4be1b6b4_2"), filler_id("sharegpt_12")
        ('filler_4be1b6b4_2', 'filler_sharegpt_12')
    """
    if "answer" in session_id:
        return session_id.replace("answer", "filler")
    return f"filler_{session_id}"


def _digest(turns: list[dict[str, Any]]) -> bytes:
    pairs = [[t.get("role"), t.get("content")] for t in turns]
    return hashlib.blake2b(orjson.dumps(pairs), digest_size=16).digest()


def _when(date: str) -> datetime:
    from convlab.loaders.longmemeval import parse_haystack_date

    return parse_haystack_date(date) or _NO_DATE


def _pool(items: Sequence[dict[str, Any]]) -> dict[str, tuple[str, list[dict[str, Any]], bytes]]:
    """Each distinct session (first copy), one per content: ``id -> (date, turns, digest)``."""
    pool: dict[str, tuple[str, list[dict[str, Any]], bytes]] = {}
    contents: set[bytes] = set()
    for item in items:
        for sid, date, turns in zip(
            item["haystack_session_ids"],
            item["haystack_dates"],
            item["haystack_sessions"],
            strict=True,
        ):
            if sid in pool:
                continue
            digest = _digest(turns)
            if digest in contents:
                continue
            contents.add(digest)
            pool[sid] = (date, turns, digest)
    return pool


def build_haystacks(
    items: Sequence[dict[str, Any]], *, sessions: int, seed: int = 0
) -> list[dict[str, Any]]:
    """The questions of ``items`` (LongMemEval's format), each with up to ``sessions`` sessions.

    See the module's docstring for the construction. ``items`` is not changed.

    Raises:
        ValueError: ``sessions`` < 1, or a filler id that would equal an evidence id.
    """
    if isinstance(sessions, bool) or not isinstance(sessions, int) or sessions < 1:
        raise ValueError(f"sessions must be a positive integer, got {sessions!r}")
    pool = _pool(items)
    order = sorted(pool)
    evidence = {str(s) for item in items for s in item["haystack_session_ids"]}
    clash = sorted(s for s in order if filler_id(s) in evidence)
    if clash:
        raise ValueError(
            f"session {clash[0]}'s filler id {filler_id(clash[0])!r} is an evidence id too"
        )
    out = []
    for item in items:
        own_ids = set(item["haystack_session_ids"])
        own = {_digest(t) for t in item["haystack_sessions"]}
        candidates = [s for s in order if s not in own_ids and pool[s][2] not in own]
        rng = random.Random(f"{seed}:{item['question_id']}")
        rng.shuffle(candidates)
        drawn = candidates[: max(0, sessions - len(own_ids))]
        rows = [
            (_when(d), 0, i, s, d, t)
            for i, (s, d, t) in enumerate(
                zip(
                    item["haystack_session_ids"],
                    item["haystack_dates"],
                    item["haystack_sessions"],
                    strict=True,
                )
            )
        ]
        for i, s in enumerate(drawn):
            date, turns, _ = pool[s]
            cleared = [{**t, "has_answer": False} for t in turns]
            rows.append((_when(date), 1, i, filler_id(s), date, cleared))
        rows.sort(key=lambda r: r[:3])
        out.append(
            {
                **item,
                "haystack_dates": [r[4] for r in rows],
                "haystack_session_ids": [r[3] for r in rows],
                "haystack_sessions": [r[5] for r in rows],
            }
        )
    return out


def write_haystacks(items: Sequence[dict[str, Any]], path: Path) -> None:
    """Write ``items`` as a LongMemEval JSON file, whole or not at all (temp, fsync, rename)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with tmp.open("wb") as fh:
            fh.write(orjson.dumps(list(items)))
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_questions(path: Path) -> list[dict[str, Any]]:
    """The questions of a LongMemEval JSON file (the oracle).

    Raises:
        OSError: the file cannot be read.
        ValueError: not JSON, or not a list of questions.
    """
    items = orjson.loads(path.read_bytes())
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ValueError("not a JSON list of questions")
    return items
