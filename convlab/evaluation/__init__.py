"""Labelled data, systems, metrics, significance, budgets, run folders, figures.

``datasets`` (labelled data), ``queries`` (queries and TREC I/O), ``evaluate`` (systems and the
evaluation), ``metrics`` and ``significance``, ``plots``, ``report`` (``report.md``),
``runfolder`` (a run folder: results beside their config), ``thresholds`` (CI's minimum scores)
and ``compare`` (the strategy comparison: ``python -m eval.run`` and ``convlab eval``).
"""
