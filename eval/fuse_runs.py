"""``python -m eval.fuse_runs``, over :mod:`convlab.evaluation.fusion_study`.

What it measures and writes: that module's docstring, or ``--help``.
"""

from __future__ import annotations

import sys

from convlab.evaluation.fusion_study import main

if __name__ == "__main__":
    sys.exit(main())
