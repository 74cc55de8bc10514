"""Fusion study over a run folder: ``python -m eval.fuse_runs RUN_FOLDER --out DIR``.

Reads the run folder's TREC runs (``runs/*.trec``), ``qrels.txt``, the query categories
(``per_query.parquet``) and the system names (``config.json``), then scores:

- every single run (Recall@5, nDCG@10; no tuning);
- two *reference* fusions with fixed weights (issue 13's orientation figures, chosen by hand on
  these very queries: NOT cross-validated, reported only to reproduce them);
- for each combination of runs and each fusion method, the weights (and RRF's k) chosen by
  grouped cross-validation by conversation (:func:`convlab.evaluation.tune.tune`): chosen on the
  training folds, reported on the held-out folds only (CROSS-VALIDATED);
- paired randomization tests of everything against the baseline (``bm25:message``), Holm-adjusted
  over all systems of a metric (:func:`convlab.evaluation.significance.compare`);
- Recall@5 per category.

``--lexical-units LOCOMO_JSON`` first builds BM25 runs over other strategies' units
(``bm25:sequential``, ``bm25:turn_pair``, ``bm25:whole_turn``: no model, only the tokenizer;
scored per message like every other system), saves them as TREC runs under ``DIR/runs`` and adds
them to the study. Writes ``DIR/fusion.json``, ``DIR/fusion.md``, ``DIR/choices.parquet`` (the
setting chosen per fold) and ``DIR/per_query.parquet`` (the held-out per-query values).
"""

from __future__ import annotations

import sys

from convlab.evaluation.fusion_study import main

if __name__ == "__main__":
    sys.exit(main())
