"""Two judge sessions on one qrels log: a lock per write, last write wins, conflicts reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from convlab.evaluation.judgments import read_judgments
from convlab.judge import Candidate, JudgmentLog, judge_loop

N = 40
_WRITER = textwrap.dedent(
    """
    import json, os, sys, time
    from convlab.judge import Candidate, JudgmentLog
    path, grade, go = sys.argv[1], sys.argv[2], sys.argv[3]
    log = JudgmentLog(path, assessor="ana")
    open(go + "." + grade, "w").close()  # opened: ready
    while not os.path.exists(go):
        time.sleep(0.001)
    for i in range(int(sys.argv[4])):
        log.record(Candidate("q", "query", f"d{i}", "c", "text", (), ()), grade)
    print(json.dumps([[c.earlier.grade, c.later.grade, c.later.doc_id] for c in log.conflicts]))
    """
)


def _cand(d: str) -> Candidate:
    return Candidate("q", "query", d, "c", "text", (), ())


def test_two_concurrent_writers_of_one_assessor_report_every_conflict(tmp_path: Path) -> None:
    path, go = tmp_path / "qrels.jsonl", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), grade, str(go), str(N)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for grade in ("relevant", "not")
    ]
    deadline = time.monotonic() + 60  # both sessions have opened the log before either writes
    while not all((tmp_path / f"go.{g}").exists() for g in ("relevant", "not")):
        assert time.monotonic() < deadline
        assert all(p.poll() is None for p in procs)  # a session that died says so at once
        time.sleep(0.01)
    go.touch()
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    conflicts = [c for out in outs for c in json.loads(out)]
    judgments, torn = read_judgments(path)  # every line whole: no write interleaved another
    assert torn is None
    assert len(judgments) == 2 * N
    # each item was graded 2 by one session and 0 by the other: whichever wrote second saw the
    # first's grade under the lock, so exactly one conflict per item, reported by the later one
    assert sorted(c[2] for c in conflicts) == sorted(f"d{i}" for i in range(N))
    last = {j.doc_id: j.grade for j in judgments}  # last write wins
    for earlier, later, doc in conflicts:
        assert {earlier, later} == {0, 2}
        assert last[doc] == later


def test_a_second_session_skips_what_the_first_judged_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "qrels.jsonl"
    first, second = JudgmentLog(path, assessor="ana"), JudgmentLog(path, assessor="ana")
    first.record(_cand("d1"), "relevant")  # after the second session opened the log
    keys = iter(["n", "q"])
    out: list[str] = []
    n = judge_loop([_cand("d1"), _cand("d2")], second, read=lambda _: next(keys), write=out.append)
    assert n == 1
    assert out[0] == "[1 of 2] judged in another session"
    assert [(j.doc_id, j.grade) for j in read_judgments(path)[0]] == [("d1", 2), ("d2", 0)]
    assert second.conflicts == []


def test_the_loop_reports_a_grade_that_another_session_recorded_first(tmp_path: Path) -> None:
    path = tmp_path / "qrels.jsonl"
    second = JudgmentLog(path, assessor="ana")
    first = JudgmentLog(path, assessor="ana")

    def read(_: str) -> str:  # while the second session shows d1, the first grades it
        first.record(_cand("d1"), "relevant")
        return "n"

    out: list[str] = []
    judge_loop([_cand("d1")], second, read=read, write=out.append)
    assert [c.later.grade for c in second.conflicts] == [0]
    assert any(
        line.startswith("note: another session graded this relevant") and "yours (not)" in line
        for line in out
    )
    # other assessors never conflict: their grades are theirs
    bo = JudgmentLog(path, assessor="bo")
    bo.record(_cand("d1"), "partly")
    assert bo.conflicts == []


def test_a_line_left_unended_by_a_killed_session_is_mended_before_the_next_write(
    tmp_path: Path,
) -> None:
    path = tmp_path / "qrels.jsonl"
    log = JudgmentLog(path, assessor="ana")
    log.record(_cand("d1"), "relevant")
    with path.open("ab") as fh:  # another session dies in the middle of its line
        fh.write(b'{"query_id": "q", "doc_')
    with pytest.warns(UserWarning, match="left its last line unended"):
        log.record(_cand("d2"), "not")
    judgments, torn = read_judgments(path)
    assert torn is None
    assert [(j.doc_id, j.grade) for j in judgments] == [("d1", 2), ("d2", 0)]


def test_agreement_of_files_with_nothing_in_common_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from convlab.app.cli import main

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    JudgmentLog(a, assessor="ana").record(_cand("d1"), "relevant")
    JudgmentLog(b, assessor="bo").record(_cand("d2"), "not")
    assert main(["judge", "agreement", str(a), str(b)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"convlab judge: {a} and {b}: the two qrels have no graded (query, doc) in common"
    ]
