"""The studies: each a question asked of run folders or labelled data, with its own program.

A study reads what the evaluation made (run folders, TREC runs, labelled data) and writes a run
folder of its own; the evaluation never imports a study. The fusion study, routing per question
type, the resurrection grid and its cell chosen by cross-validation, the selection of a system
by cross-validation, the fine-tuned encoder by cross-validation, the lever table, the frontier,
the search confidence, the orderings across data sets and the redaction benchmark each have a
module here and a thin program in ``eval/``.

The contract (:mod:`convlab.studies.contract`): a study is a frozen dataclass config and a
function ``run(config, out) -> StudyResult`` that writes a standard run folder (``config.json``
with the command, commit, data and versions; ``metrics.json``; the frames; ``report.md``);
:data:`STUDIES` names every study that keeps it (:mod:`convlab.studies.catalog`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from convlab._lazy import lazy_exports

_EXPORTS = {
    "STUDIES": "convlab.studies.catalog",
    "Study": "convlab.studies.contract",
    "StudyResult": "convlab.studies.contract",
    "write_study": "convlab.studies.contract",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, re-exported
    from convlab.studies.catalog import STUDIES as STUDIES
    from convlab.studies.contract import Study as Study
    from convlab.studies.contract import StudyResult as StudyResult
    from convlab.studies.contract import write_study as write_study
