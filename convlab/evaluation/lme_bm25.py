"""The official flat BM25 of LongMemEval: the reference its paper and README report.

Per question, over that question's keys only (:mod:`convlab.evaluation.lme_official`): rank_bm25's
``BM25Okapi`` (Robertson et al., Okapi BM25; k1 = 1.5, b = 0.75, epsilon = 0.25: rank_bm25's
defaults, as the official code leaves them) over ``text.split(" ")``, scored for
``question.split(" ")``, every key ranked by ``np.argsort(scores)[::-1]`` (ties in numpy's
order), as ``run_retrieval.py``'s ``flat-bm25`` does: no lower-casing, no stemming, IDF from the
question's own haystack. convlab's BM25 (bm25s, over the whole corpus) is another system.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from convlab.extras import require

__all__ = ["REFERENCE", "flat_bm25"]

REFERENCE = "flat-bm25 (official)"
"""The reference system's name in reports."""


def flat_bm25(keys: pl.DataFrame, questions: pl.DataFrame) -> pl.DataFrame:
    """Every question's ranking of its keys by the official flat BM25.

    Args:
        keys: ``query_id, position, key, gold, text``
            (:data:`convlab.evaluation.lme_official.KEYS`).
        questions: ``query_id, question``.

    Returns:
        ``query_id, rank, key, gold``: every key of each question, ranks from 1.
    """
    rank_bm25 = require("rank_bm25", "eval", feature="LongMemEval's flat BM25 reference")
    text_of = dict(questions.select("query_id", "question").iter_rows())
    parts = []
    grouped = keys.sort("query_id", "position").group_by("query_id", maintain_order=True)
    for qid, ids, gold, texts in grouped.agg("key", "gold", "text").iter_rows():
        bm25 = rank_bm25.BM25Okapi([t.split(" ") for t in texts])
        order = np.argsort(bm25.get_scores(text_of[qid].split(" ")))[::-1]
        parts.append(
            pl.DataFrame(
                {
                    "query_id": qid,
                    "rank": np.arange(1, len(order) + 1, dtype=np.int32),
                    "key": [ids[i] for i in order],
                    "gold": [gold[i] for i in order],
                },
                schema={
                    "query_id": pl.String,
                    "rank": pl.Int32,
                    "key": pl.String,
                    "gold": pl.Boolean,
                },
            )
        )
    return pl.concat(parts)
