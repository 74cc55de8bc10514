"""``python -m eval.resurrection_grid``, over :mod:`convlab.evaluation.resurrection_grid`.

What it measures and writes: that module's docstring, or ``--help``.
"""

from __future__ import annotations

import sys

from convlab.evaluation.resurrection_grid import main

if __name__ == "__main__":
    sys.exit(main())
