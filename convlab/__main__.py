"""``python -m convlab``: the ``convlab`` command."""

from __future__ import annotations

import sys

from convlab.app.cli.main import main

if __name__ == "__main__":  # pragma: no cover - run as a program
    sys.exit(main())
