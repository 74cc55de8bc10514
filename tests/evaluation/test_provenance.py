"""The source commit a run records: the commit only when the tracked files are that commit's."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from convlab.evaluation.provenance import source_commit


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_clean_modified_and_no_checkout(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.py").write_text("x = 1\n")
    _git(repo, "add", "a.py")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    head = _git(repo, "rev-parse", "HEAD")
    assert re.fullmatch(r"[0-9a-f]{40}", head)
    assert source_commit(repo) == (head, "clean")
    (repo / "new.txt").write_text("untracked files are not the source\n")
    assert source_commit(repo) == (head, "clean")
    (repo / "a.py").write_text("x = 2\n")
    assert source_commit(repo) == (None, "modified")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert source_commit(plain) == (None, "unknown")
