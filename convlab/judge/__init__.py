"""Judging: labelled queries for any history by TREC-style pooling.

For each query of an unlabelled queries file, the top ``depth`` docs of several systems are
pooled (Spärck Jones & van Rijsbergen, 1975; the TREC protocol), de-duplicated and shuffled with
a seed, so the assessor cannot tell which system found what, nor in which order. Each candidate
carries its resurrected context (:func:`convlab.resurrection.resurrect`: what its unit was embedded
with) and the query's terms, for highlighting.

Judgments are graded (relevant = 2, partly relevant = 1, not relevant = 0; ``skip`` = no grade)
and appended one JSON line at a time to a qrels file (``query_id, doc_id, grade, assessor,
time``), flushed and fsynced before the next candidate is shown: a killed session loses at most
the judgment being made. A torn last line (a write cut short) is reported and cut off when the
file is opened again; a bad line anywhere else is a :class:`convlab.loaders.LoadError` naming
file and line. Resuming skips what the assessor already judged (skips included).

Several assessors may judge the same pool; :func:`agreement` gives Cohen's kappa on the overlap.
The log is read (its judgments, the qrels made of them) by :mod:`convlab.evaluation.judgments`,
below the judge: labelled data never imports the judge, whose pools run evaluations.

Example:
    >>> pool = build_pool(data, systems, embedder=emb, depth=10)  # doctest: +SKIP
    >>> log = JudgmentLog("qrels.jsonl", assessor="ana")  # doctest: +SKIP
    >>> for c in log.pending(pool):  # doctest: +SKIP
    ...     log.record(c, "r")
"""

from convlab.judge.pool import (
    Candidate,
    build_pool,
    pool_hits,
    shuffle_pool,
    systems_from_names,
)
from convlab.judge.qrels import (
    GRADES,
    KEYS,
    Agreement,
    Conflict,
    JudgmentLog,
    agreement,
)
from convlab.judge.terminal import judge_loop, render

__all__ = [
    "GRADES",
    "KEYS",
    "Agreement",
    "Candidate",
    "Conflict",
    "JudgmentLog",
    "agreement",
    "build_pool",
    "judge_loop",
    "pool_hits",
    "render",
    "shuffle_pool",
    "systems_from_names",
]
