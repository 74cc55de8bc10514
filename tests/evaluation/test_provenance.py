"""The source commit a run records: the commit only when the tracked files are that commit's."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

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


def test_what_made_a_run_is_read_from_its_config_or_its_sidecars(tmp_path: Path) -> None:
    from convlab.evaluation.provenance import RunError, run_provenance

    sha = "0123456789abcdef0123456789abcdef01234567"
    run = tmp_path / "run"
    run.mkdir()
    prov = run_provenance(run, {"command": ["python", "-m", "eval.run", "--out", "a b"],
                                "commit": sha + "\n"})  # fmt: skip
    assert (prov.command, prov.commit) == ("python -m eval.run --out 'a b'", sha)
    assert prov.recorded_in == (str(run / "config.json"),)
    with pytest.raises(RunError, match="modified source tree"):
        run_provenance(run, {"command": "x", "commit": None, "commit_state": "modified"})
    with pytest.raises(RunError, match="no record of the command and commit"):
        run_provenance(run, {})
    (tmp_path / "run.commit").write_text(sha + "\n")
    (tmp_path / "run.log").write_text(
        '\tCommand being timed: "python -m eval.run --out run"\n\tExit status: 0\n'
    )
    prov = run_provenance(run, {})
    assert (prov.command, prov.commit) == ("python -m eval.run --out run", sha)
    (tmp_path / "run.log").write_text('\tCommand being timed: "x --out run"\n\tExit status: 1\n')
    with pytest.raises(RunError, match="did not exit 0"):
        run_provenance(run, {})
