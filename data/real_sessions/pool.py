"""Pool and judge data/real_sessions with convlab.judge, driven from a script.

``python data/real_sessions/pool.py show [QUERY_IDS]`` prints each pooled candidate (query, doc
id, the doc's text) in judging order; ``show --new [QUERY_IDS]`` only those not judged yet,
with their whole doc ids.

``python data/real_sessions/pool.py record-docs GRADES`` appends the grades in GRADES to
``qrels.jsonl`` through :class:`convlab.judge.JudgmentLog`: a line ``query_id doc_id grade``
(grade ``r`` relevant, ``p`` partly, ``n`` not, ``s`` skip) names its doc, so it means the same
whatever the pool holds today. Every candidate of the current pool that is still unjudged must
have a line (each was read); already-judged candidates are skipped, so recording resumes.

``record GRADES`` is the first pass's positional form (``grades.txt``: ``query_id 2p 10r 14s``
grades candidate 2 partly relevant, 10 relevant, skips 14, and every other candidate of the query
not relevant). Positions are those of the pool at the time, so it refuses to run when the pool
of a query it names holds an unjudged doc: use ``record-docs`` for that.

The pool: the systems in ``SYSTEMS``, depth 10, seed 0. Needs the transcripts in the shared
folder (``CONVLAB_SHARED``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from convlab.embed import CachedEmbedder, MiniLMEmbedder
from convlab.evaluation.datasets import LabelledData, _sources
from convlab.evaluation.queries import read_queries
from convlab.judge import Candidate, JudgmentLog, build_pool, systems_from_names

HERE = Path(__file__).resolve().parent
SYSTEMS = ("message", "turn_pair", "whole_turn", "bm25:message")
ASSESSOR = "helper-judge (AI assistant)"


def pool() -> list[Candidate]:
    """The pool of every query over today's corpus, in judging order."""
    corpus = _sources(HERE / "sources.json")
    data = LabelledData("real_sessions", corpus, read_queries(HERE / "queries.jsonl"))
    emb = CachedEmbedder(MiniLMEmbedder(), "runs/cache")
    return build_pool(data, systems_from_names(SYSTEMS), embedder=emb, depth=10, seed=0)


def show(cands: list[Candidate], args: list[str], log: JudgmentLog) -> None:
    """Print the candidates (``--new``: only the unjudged ones, with whole doc ids)."""
    new = "--new" in args
    wanted = {a for a in args if a != "--new"}
    done = log.judged()
    for c in cands:
        if (wanted and c.query_id not in wanted) or (new and (c.query_id, c.doc_id) in done):
            continue
        if c.position == 1 or new:
            print(f"\n#### {c.query_id} ({c.total}): {c.query}")
        text = " ".join(c.text.split())[: 600 if new else 330]
        name = c.doc_id if new else f"{c.doc_id.split('-')[0]}:{c.doc_id.rsplit(':', 1)[1]}"
        print(f"{c.position:2d} {name} {text}")


def record_positions(cands: list[Candidate], grades: Path, log: JudgmentLog) -> None:
    """Record ``grades.txt``'s positional grades; refuse a query whose pool changed."""
    by_query: dict[str, list[Candidate]] = {}
    for c in cands:
        by_query.setdefault(c.query_id, []).append(c)
    done = log.judged()
    for line in grades.read_text().splitlines():
        if not line.strip():
            continue
        qid, *marks = line.split()
        group = by_query[qid]
        judged = [(c.query_id, c.doc_id) in done for c in group]
        if any(judged) and not all(judged):
            raise SystemExit(
                f"{grades}: {qid}'s pool changed since it was graded by position; "
                "grade its new docs with record-docs"
            )
        keys = ["n"] * len(group)
        for m in marks:
            pos, key = int(m[:-1]), m[-1]
            if not 1 <= pos <= len(group) or key not in "rpns":
                raise SystemExit(f"{qid}: bad grade {m!r} ({len(group)} candidates)")
            keys[pos - 1] = key
        for c, k in zip(group, keys, strict=True):
            if (c.query_id, c.doc_id) not in done:
                log.record(c, k)


def record_docs(cands: list[Candidate], grades: Path, log: JudgmentLog) -> None:
    """Record grades named by doc id; every unjudged candidate must have one."""
    by_pair = {(c.query_id, c.doc_id): c for c in cands}
    given: dict[tuple[str, str], str] = {}
    for n, line in enumerate(grades.read_text().splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 3 or parts[2] not in ("r", "p", "n", "s"):
            raise SystemExit(f"{grades}:{n}: expected 'query_id doc_id r|p|n|s', got {line!r}")
        if (parts[0], parts[1]) not in by_pair:
            raise SystemExit(f"{grades}:{n}: {parts[0]} {parts[1]} is not in the pool")
        given[(parts[0], parts[1])] = parts[2]
    done = log.judged()
    missing = [p for p in by_pair if p not in done and p not in given]
    if missing:
        raise SystemExit(f"{grades}: {len(missing)} unjudged candidates have no line: {missing[0]}")
    for pair, key in given.items():
        if pair not in done:
            log.record(by_pair[pair], key)


def main(argv: list[str]) -> int:
    """``show``, ``record`` or ``record-docs``."""
    cands = pool()
    log = JudgmentLog(HERE / "qrels.jsonl", assessor=ASSESSOR)
    if argv[0] == "show":
        show(cands, argv[1:], log)
        return 0
    if argv[0] == "record":
        record_positions(cands, Path(argv[1]), log)
    elif argv[0] == "record-docs":
        record_docs(cands, Path(argv[1]), log)
    else:
        raise SystemExit(f"unknown command {argv[0]!r}: show, record or record-docs")
    print(f"{len(log.judgments)} judgments in {log.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
