"""Pool and judge data/real_sessions with convlab.judge, driven from a script.

``python data/real_sessions/pool.py show [QUERY_IDS]`` prints each pooled candidate (query, doc
id, the doc's text) in judging order. ``python data/real_sessions/pool.py record GRADES`` appends
the grades in GRADES to ``qrels.jsonl`` through :class:`convlab.judge.JudgmentLog`: a line
``query_id 2p 10r 14s`` grades candidate 2 partly relevant, 10 relevant, skips 14, and every
other candidate of the query not relevant (each candidate was read; the sparse form only saves
typing). Already-judged candidates are skipped, so recording resumes. The pool: the systems in
``SYSTEMS``, depth 10, seed 0. Needs the transcripts in the shared folder (``CONVLAB_SHARED``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from convlab.datasets import LabelledData, _sources
from convlab.embed import CachedEmbedder, MiniLMEmbedder
from convlab.judge import JudgmentLog, build_pool, systems_from_names
from convlab.queries import read_queries

HERE = Path(__file__).resolve().parent
SYSTEMS = ("message", "turn_pair", "whole_turn", "bm25:message")
ASSESSOR = "helper-judge (AI assistant)"


def pool() -> list:
    corpus = _sources(HERE / "sources.json")
    data = LabelledData("real_sessions", corpus, read_queries(HERE / "queries.jsonl"))
    emb = CachedEmbedder(MiniLMEmbedder(), "runs/cache")
    return build_pool(data, systems_from_names(SYSTEMS), embedder=emb, depth=10, seed=0)


def main(argv: list[str]) -> int:
    cands = pool()
    if argv[0] == "show":
        wanted = set(argv[1:])
        for c in cands:
            if wanted and c.query_id not in wanted:
                continue
            if c.position == 1:
                print(f"\n#### {c.query_id} ({c.total}): {c.query}")
            text = " ".join(c.text.split())[:330]
            print(f"{c.position:2d} {c.doc_id.split('-')[0]}:{c.doc_id.rsplit(':', 1)[1]} {text}")
        return 0
    log = JudgmentLog(HERE / "qrels.jsonl", assessor=ASSESSOR)
    by_query: dict[str, list] = {}
    for c in cands:
        by_query.setdefault(c.query_id, []).append(c)
    for line in Path(argv[1]).read_text().splitlines():
        if not line.strip():
            continue
        qid, *marks = line.split()
        group = by_query[qid]
        keys = ["n"] * len(group)
        for m in marks:
            pos, key = int(m[:-1]), m[-1]
            if not 1 <= pos <= len(group) or key not in "rpns":
                raise SystemExit(f"{qid}: bad grade {m!r} ({len(group)} candidates)")
            keys[pos - 1] = key
        done = log.judged()
        for c, k in zip(group, keys, strict=True):
            if (c.query_id, c.doc_id) not in done:
                log.record(c, k)
    print(f"{len(log.judgments)} judgments in {log.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
