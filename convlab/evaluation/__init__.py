"""Labelled data, systems, metrics, significance, budgets, run folders, figures.

``datasets`` (labelled data), ``queries`` (queries and TREC I/O), ``evaluate`` (systems and the
evaluation), ``metrics`` and ``significance``, ``plots``, ``report`` (``report.md``),
``runfolder`` (a run folder: results beside their config), ``thresholds`` (CI's minimum scores)
and ``compare`` (the strategy comparison: ``python -m eval.run`` and ``convlab eval``).

The public names below are imported on first use (:mod:`convlab._lazy`). :func:`convlab.evaluate`
and :func:`convlab.tune` are exported by ``convlab`` itself: their modules share their names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from convlab._lazy import lazy_exports

_EXPORTS = {
    "EvalConfig": "convlab.evaluation.config",
    "Evaluation": "convlab.evaluation.result",
    "LabelledData": "convlab.evaluation.datasets",
    "grid_means": "convlab.evaluation.policy_grid",
    "grid_significance": "convlab.evaluation.policy_grid",
    "holm": "convlab.evaluation.significance",
    "load_labelled": "convlab.evaluation.datasets",
    "paired_randomization": "convlab.evaluation.significance",
    "plot_systems": "convlab.evaluation.policy_grid",
    "plots": "convlab.evaluation.plots",
    "read_qrels": "convlab.evaluation.queries",
    "read_queries": "convlab.evaluation.queries",
    "read_run": "convlab.evaluation.queries",
    "save_run": "convlab.evaluation.runfolder",
    "write_run": "convlab.evaluation.queries",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, re-exported
    from convlab.evaluation import plots as plots
    from convlab.evaluation.config import EvalConfig as EvalConfig
    from convlab.evaluation.datasets import LabelledData as LabelledData
    from convlab.evaluation.datasets import load_labelled as load_labelled
    from convlab.evaluation.policy_grid import grid_means as grid_means
    from convlab.evaluation.policy_grid import grid_significance as grid_significance
    from convlab.evaluation.policy_grid import plot_systems as plot_systems
    from convlab.evaluation.queries import read_qrels as read_qrels
    from convlab.evaluation.queries import read_queries as read_queries
    from convlab.evaluation.queries import read_run as read_run
    from convlab.evaluation.queries import write_run as write_run
    from convlab.evaluation.result import Evaluation as Evaluation
    from convlab.evaluation.runfolder import save_run as save_run
    from convlab.evaluation.significance import holm as holm
    from convlab.evaluation.significance import paired_randomization as paired_randomization
