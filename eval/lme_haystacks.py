"""``python -m eval.lme_haystacks``, over :mod:`convlab.evaluation.lme_haystacks`.

What it builds and writes: that module's docstring, or ``--help``.
"""

from __future__ import annotations

import sys

from convlab.evaluation.lme_haystacks import main

if __name__ == "__main__":
    sys.exit(main())
