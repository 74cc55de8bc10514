"""Resurrection policies compared at equal budgets, from a saved run folder, no model needed.

``python -m eval.resurrection_grid RUN_FOLDER --data LOCOMO --out DIR``

Reads a run folder of ``python -m eval.run`` (``config.json`` and the TREC runs under ``runs/``:
ranked docs per query), rebuilds the data's chunks and units (the tokenizer only, with the run's
content policy), and scores every (system, policy, budget) with
:func:`convlab.resurrection.budget_measures`: mean coverage, evidence token recall, answer
containment, tokens used and redundancy. Writes ``grid.json``, ``grid.md`` and
``containment_vs_tokens.png`` (answer containment against tokens used, one line per
(system, policy)) into ``DIR``.

TREC runs hold doc ids, not unit ids. With ``--exact CACHE`` the systems are searched again
(MiniLM through the embedding cache, BM25 without a model) and their hits carry unit ids; the
re-run's ranked docs are compared with the saved run's (``mapping`` in ``grid.json``). Without
it (no model at all), each ranked doc is mapped back to the system's unit for it:
among the units whose ``doc_ids`` hold the doc, those whose other docs all rank at or above it
(a doc scores its best unit, so its best unit's other docs score at least as high), the first in
conversation order. The doc-based policies (``doc``, ``window``, ``pair``) read only the hit's doc
and are exact; ``unit`` and ``unit+doc`` are exact where one unit remains, and ``mapping`` in
``grid.json`` counts the hits where several did. Where the run folder holds ``budgets.parquet``
(its ``unit`` figures, computed from the real hits), the rebuilt ``unit`` figures are compared
with it per query and budget.
"""

from __future__ import annotations

import sys

from convlab.evaluation.resurrection_grid import main

if __name__ == "__main__":
    sys.exit(main())
