"""Fail when a system falls below its threshold: ``python -m eval.check_thresholds RUN --set NAME``.

Thresholds live in ``eval/thresholds.toml``: per set (``sample``, ``locomo2``), per system, the
minimum of each metric (means from ``metrics.json``, ``coverage@512`` among them).
They were set from measured runs minus a small margin, so a regression fails CI and noise does
not.
"""

from __future__ import annotations

import sys
from pathlib import Path

from convlab.evaluation.thresholds import main

if __name__ == "__main__":
    sys.exit(main(thresholds=Path(__file__).with_name("thresholds.toml"), description=__doc__))
