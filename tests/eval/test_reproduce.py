"""``python -m eval.reproduce``: runs a tier's regressions, checks their figures, says why not."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from convlab.evaluation.regressions import RECORDED

ROOT = Path(__file__).resolve().parents[2]


def _registry(tmp_path: Path, *, expected: float = 0.5, fail: bool = False) -> Path:
    data = tmp_path / "data.txt"
    data.write_text("the data")
    sha = hashlib.sha256(b"the data").hexdigest()
    regs = tmp_path / "regressions"
    regs.mkdir(exist_ok=True)
    step = '["tests.eval.fake_run", "--out", "{run}"' + (', "--fail"]' if fail else "]")
    (regs / "tiny.toml").write_text(
        f'name = "tiny"\ntitle = "Tiny"\ntier = "ci"\ndata = "{data}"\n'
        f'data_sha256 = "{sha}"\nsteps = [{step}]\n{RECORDED}\n'
        f'figures = [{{ system = "x", metric = "recall@5", expected = {expected}, '
        "tolerance = 0.001 }]\n"
    )
    return regs


def _reproduce(tmp_path: Path, regs: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "eval.reproduce",
            "--tier",
            "ci",
            "--check",
            "--regressions",
            str(regs),
            "--runs",
            str(tmp_path / "runs"),
            *extra,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=ROOT,
    )


def test_a_figure_within_tolerance_passes_and_the_tier_is_recorded(tmp_path: Path) -> None:
    done = _reproduce(tmp_path, _registry(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "tiny: x recall@5 0.5000 (expected 0.5000 +- 0.001) ok" in done.stdout
    summary = json.loads((tmp_path / "runs" / "ci.json").read_text())
    assert summary["failed"] == []
    assert summary["figures"][0]["ok"] is True
    assert set(summary["seconds"]) == {"tiny"}


def test_a_moved_figure_fails_with_one_line(tmp_path: Path) -> None:
    done = _reproduce(tmp_path, _registry(tmp_path, expected=0.6))
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "tiny: x recall@5 0.5000 (expected 0.6000 +- 0.001) OUT OF TOLERANCE"
    )


def test_changed_data_or_a_failing_step_is_one_line_naming_the_file(tmp_path: Path) -> None:
    regs = _registry(tmp_path)
    (tmp_path / "data.txt").write_text("other data")
    done = _reproduce(tmp_path, regs)
    assert done.returncode == 1
    assert f"{regs / 'tiny.toml'}: {tmp_path / 'data.txt'} has sha256" in done.stderr
    done = _reproduce(tmp_path, _registry(tmp_path, fail=True))
    assert done.returncode == 1
    assert "step `tests.eval.fake_run --out" in done.stderr
    assert "--fail` exited 3" in done.stderr


def test_record_rewrites_the_figures_from_the_run(tmp_path: Path) -> None:
    regs = _registry(tmp_path, expected=0.6)
    done = _reproduce(tmp_path, regs, "--record")
    assert done.returncode == 0, done.stderr
    text = (regs / "tiny.toml").read_text()
    assert '{ system = "x", metric = "recall@5", expected = 0.5, tolerance = 0.002 }' in text
    assert _reproduce(tmp_path, regs).returncode == 0


def test_an_unknown_regression_is_a_usage_error(tmp_path: Path) -> None:
    done = _reproduce(tmp_path, _registry(tmp_path), "--only", "nope")
    assert done.returncode == 2
    assert "not in tier ci: nope" in done.stderr
