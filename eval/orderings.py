"""``python -m eval.orderings``, over :mod:`convlab.evaluation.orderings`.

What it compares and writes: that module's docstring, or ``--help``.
"""

from __future__ import annotations

import sys

from convlab.evaluation.orderings import main

if __name__ == "__main__":
    sys.exit(main())
