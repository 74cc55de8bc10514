"""The strategy comparison: ``python -m eval.run --data PATH --out DIR``.

Writes a run folder: ``config.json`` (every setting, model id, package versions, data
fingerprint), ``per_query.parquet``, ``budgets.parquet``, ``significance.parquet``,
``category_significance.parquet``, ``metrics.json``, ``qrels.txt`` and one TREC run per system
under ``runs/``, ``report.md`` and PNG plots; ``systems.toml`` (the systems as run),
``tuning.parquet`` and ``systems.chosen.toml`` (the cross-validated systems: each fold's
choice, and the choice on all queries fixed, to run on other data with ``--systems``); with
several ``--resurrection`` policies ``policy_budgets.parquet``, ``policy_significance.parquet``
and ``policy_grid.png``. ``--systems FILE`` compares the systems of an experiment file (TOML)
instead of the default ones. ``--data`` is the bundled sample folder (default),
LoCoMo (its json, or a folder holding ``locomo/locomo10.json``), a LoCoMo-family file or folder
of files, or a LongMemEval file (``longmemeval_s.json``: searched per question in its haystack,
scored at turn and session level with LongMemEval's measures), or a folder of pooled judgments
(``data/real_sessions``: ``judged@10`` and ``bpref`` join the headline). ``--protocol
longmemeval`` judges a LongMemEval file by LongMemEval's official protocol (user messages as
keys, official gold and measures, strict and non-abstention averages, beside the official flat
BM25): ``official_per_query.parquet``, ``official_summary.parquet`` and
``official_significance.parquet`` join the folder.
"""

from __future__ import annotations

import sys

from convlab.app.cli.eval import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m eval.run", description=__doc__))
