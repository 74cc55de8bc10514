"""Where convlab finds data it does not ship: LoCoMo and the shared transcript samples.

Order of look-up: an explicit path, then ``CONVLAB_DATA`` (a datasets folder holding
``locomo/locomo10.json``, or the json file itself), then ``../shared/datasets`` beside the
repository. Nothing is downloaded.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["REPO_ROOT", "locomo_path", "sample_data_path", "shared_dir"]

REPO_ROOT = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    """The project's ``shared`` folder (``CONVLAB_SHARED`` or ``../shared`` beside the repo)."""
    env = os.environ.get("CONVLAB_SHARED")
    return Path(env) if env else REPO_ROOT.parent / "shared"


def locomo_path(path: str | Path | None = None) -> Path:
    """The LoCoMo json file.

    Raises:
        FileNotFoundError: naming every place looked at, and how to point convlab at the file.
    """
    candidates: list[Path] = []
    if path is not None:
        candidates.append(Path(path).expanduser())
    env = os.environ.get("CONVLAB_DATA")
    if env:
        candidates.append(Path(env).expanduser())
    candidates.append(shared_dir() / "datasets")
    for c in candidates:
        if c.is_file():
            return c
        if (c / "locomo" / "locomo10.json").is_file():
            return c / "locomo" / "locomo10.json"
        if (c / "locomo10.json").is_file():
            return c / "locomo10.json"
    looked = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(
        f"LoCoMo not found (looked at {looked}); pass its path or set CONVLAB_DATA to the "
        "folder holding locomo/locomo10.json"
    )


def sample_data_path() -> Path:
    """The bundled sample corpus written for convlab (``data/sample``)."""
    return REPO_ROOT / "data" / "sample"
