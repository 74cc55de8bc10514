"""``eval.bench_longmemeval``: its help, and a tiny cost curve with the hash embedder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.evaluation.test_lme_haystacks import _question


def _bench(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eval.bench_longmemeval", *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def test_help() -> None:
    """--help exits 0 and names the curve's options."""
    run = _bench("--help")
    assert run.returncode == 0
    for option in ("--oracle", "--points", "--embedder", "--questions", "--out"):
        assert option in run.stdout


@pytest.mark.slow
def test_tiny_curve(tmp_path: Path) -> None:
    """Two points, two strategies, hash embedder: cold embeds, warm reads the cache."""
    oracle = [
        _question("q1", {"answer_a": ("2023/01/01 (Sun) 10:00", "alpha one. alpha two.")}),
        _question("q2", {"answer_b": ("2023/02/01 (Wed) 10:00", "beta one. beta two.")}),
        _question("q3", {"answer_c": ("2023/03/01 (Wed) 10:00", "gamma one. gamma two.")}),
    ]
    path = tmp_path / "oracle.json"
    path.write_text(json.dumps(oracle))
    out = tmp_path / "out"
    argv = ["--oracle", str(path), "--points", "1,3", "--strategies", "message,isolated"]
    run = _bench(*argv, "--questions", "2", "--out", str(out), "--work", str(tmp_path / "w"))
    assert run.returncode == 0, run.stderr
    report = json.loads((out / "bench_longmemeval.json").read_text())
    (curve,) = report["curves"]
    assert (curve["embedder"], curve["questions"], curve["seed"]) == ("hash", 2, 0)
    assert len(curve["question_ids"]) == 2
    rows = curve["rows"]
    assert [(r["sessions_per_question"], r["cold"]["strategy"]) for r in rows] == [
        (1, "message"),
        (1, "isolated"),
        (3, "message"),
        (3, "isolated"),
    ]
    for r in rows:
        cold, warm = r["cold"], r["warm"]
        n = r["sessions_per_question"]
        assert cold["questions"] == 2
        assert cold["haystack_sessions"] == 2 * n  # one evidence session each, then filler
        # each session: a user and an assistant message
        assert cold["haystack_messages"] == 2 * cold["haystack_sessions"]
        assert cold["embedding"]["embedded"] == cold["distinct_texts"] > 0
        assert warm["embedding"]["embedded"] == 0
        assert warm["embedding"]["from_cache"] == cold["distinct_texts"]
        assert warm["units"] == cold["units"]
        assert cold["units_per_message"] == round(cold["units"] / cold["messages"], 3)
        assert cold["peak_rss_mb"] > 0
        assert cold["hit_questions"] == 2
    # message: one unit per message (two questions, one session of two short messages each)
    one = {r["cold"]["strategy"]: r["cold"] for r in rows if r["sessions_per_question"] == 1}
    assert one["message"]["units"] == one["message"]["messages"] == 4
    assert not list((tmp_path / "w").glob("cache-*"))  # the caches are removed
    # a second run of another sample keeps the first curve
    again = _bench(*argv, "--questions", "1", "--points", "1", "--out", str(out))
    assert again.returncode == 0, again.stderr
    report = json.loads((out / "bench_longmemeval.json").read_text())
    assert sorted(c["questions"] for c in report["curves"]) == [1, 2]
