"""Labelled queries: a JSONL format, and TREC qrels and run files for any IR tool.

One JSON object per line: ``query_id`` (str), ``text`` (str), ``conversation_id`` (str or null:
the scope; null = corpus-wide), ``relevant`` (list of doc ids), ``category`` (str or null),
``answer`` (str or null).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from convlab import schema
from convlab.atomic import write_text_atomic
from convlab.errors import LoadError
from convlab.files import TABLE, read_text_regular
from convlab.loaders.base import question_problem

__all__ = [
    "read_qrels",
    "read_queries",
    "read_run",
    "relevant_by_query",
    "write_qrels",
    "write_queries",
    "write_run",
]

_TYPES: dict[str, tuple[type, ...]] = {
    "query_id": (str,),
    "text": (str,),
    "conversation_id": (str, type(None)),
    "category": (str, type(None)),
    "answer": (str, int, float, type(None)),
}


def read_queries(path: str | Path, *, strict: bool = True) -> pl.DataFrame:
    """Read a queries JSONL file (:data:`convlab.schema.QUERIES`).

    Raises:
        LoadError: naming file and line, for a bad record in strict mode (lenient mode skips it
            with a warning count in the frame's ``skipped`` attribute -- see the return note).
    """
    p = Path(path)
    rows: list[dict[str, object]] = []
    skipped: list[tuple[int, str]] = []
    seen: set[str] = set()
    for number, raw in enumerate(read_text_regular(p, limit=TABLE).splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
            if not isinstance(rec, dict):
                raise ValueError("not a JSON object")
            for key, types in _TYPES.items():
                if key in ("query_id", "text") and key not in rec:
                    raise ValueError(f"missing {key!r}")
                if not isinstance(rec.get(key), types):
                    raise ValueError(f"{key!r} has the wrong type")
            if (problem := question_problem(rec["text"])) is not None:
                raise ValueError(problem)
            relevant = rec.get("relevant", [])
            if not isinstance(relevant, list) or not all(isinstance(d, str) for d in relevant):
                raise ValueError("'relevant' must be a list of doc ids")
            if rec["query_id"] in seen:
                raise ValueError(f"duplicate query_id {rec['query_id']!r}")
        except ValueError as exc:
            if strict:
                raise LoadError(p, number, str(exc)) from None
            skipped.append((number, str(exc)))
            continue
        seen.add(rec["query_id"])
        answer = rec.get("answer")
        rows.append(
            {
                "query_id": rec["query_id"],
                "text": rec["text"],
                "conversation_id": rec.get("conversation_id"),
                "relevant": relevant,
                "category": rec.get("category"),
                "answer": None if answer is None else str(answer),
            }
        )
    if skipped:
        import warnings

        warnings.warn(f"{p}: skipped {len(skipped)} bad query records: {skipped[:3]}", stacklevel=2)
    return schema.frame(rows, schema.QUERIES)


def write_queries(queries: pl.DataFrame, path: str | Path) -> None:
    """Write queries as JSONL."""
    with Path(path).open("w", encoding="utf-8") as fh:
        for r in queries.select(list(schema.QUERIES)).iter_rows(named=True):
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def write_qrels(queries: pl.DataFrame, path: str | Path) -> None:
    """TREC qrels: ``qid 0 docid 1`` per relevant doc (the file is written whole or not at all)."""
    lines = [
        f"{q} 0 {d} 1\n"
        for q, rel in queries.select("query_id", "relevant").iter_rows()
        for d in rel
    ]
    write_text_atomic(path, "".join(lines))


def relevant_by_query(qrels: pl.DataFrame) -> pl.DataFrame:
    """``query_id, relevant``: each query's relevant docs (relevance > 0), in qrels order.

    Queries with no relevant doc are left out (they cannot be scored).
    """
    return (
        qrels.filter(pl.col("relevance") > 0)
        .group_by("query_id", maintain_order=True)
        .agg(pl.col("doc_id").alias("relevant"))
    )


def read_qrels(path: str | Path) -> pl.DataFrame:
    """Read TREC qrels into ``query_id, doc_id, relevance``."""
    rows = []
    for number, line in enumerate(read_text_regular(path, limit=TABLE).splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 4:
            raise LoadError(path, number, "a qrels line has 4 fields: qid iter docid rel")
        try:
            rows.append((parts[0], parts[2], int(parts[3])))
        except ValueError:
            raise LoadError(path, number, "a qrels relevance is a whole number") from None
    return pl.DataFrame(rows, schema=["query_id", "doc_id", "relevance"], orient="row")


def write_run(hits: pl.DataFrame, path: str | Path, tag: str) -> None:
    """TREC run: ``qid Q0 docid rank score tag`` (the file is written whole or not at all)."""
    rows = hits.select("query_id", "doc_id", "rank", "score").iter_rows()
    write_text_atomic(path, "".join(f"{q} Q0 {d} {r} {s:.6f} {tag}\n" for q, d, r, s in rows))


def read_run(path: str | Path) -> pl.DataFrame:
    """Read a TREC run into ``query_id, doc_id, rank, score, tag``."""
    rows = []
    for number, line in enumerate(read_text_regular(path, limit=TABLE).splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 6:
            raise LoadError(path, number, "a run line has 6 fields: qid Q0 docid rank score tag")
        try:
            rows.append((parts[0], parts[2], int(parts[3]), float(parts[4]), parts[5]))
        except ValueError:
            raise LoadError(
                path, number, "a run's rank is a whole number, its score a number"
            ) from None
    return pl.DataFrame(rows, schema=["query_id", "doc_id", "rank", "score", "tag"], orient="row")
