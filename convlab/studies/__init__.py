"""The studies: each a question asked of run folders or labelled data, with its own program.

A study reads what the evaluation made (run folders, TREC runs, labelled data) and writes a run
folder of its own; the evaluation never imports a study. The fusion study, routing per question
type, the resurrection grid and its cell chosen by cross-validation, the selection of a system
by cross-validation, the fine-tuned encoder by cross-validation, the lever table, the frontier,
the search confidence, the orderings across data sets and the redaction benchmark each have a
module here and a thin program in ``eval/``.
"""

from __future__ import annotations

__all__: list[str] = []
