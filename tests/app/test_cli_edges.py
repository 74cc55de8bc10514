"""Input at the edges of the command line: a query that is not UTF-8, absurd -k, agreement on
qrels with nothing in common, labelled data on which nothing can be scored: each exit 2, one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import convlab.embed
from convlab.app.cli import eval as eval_cli
from convlab.app.cli import main
from convlab.app.cli.search import MAX_K
from convlab.app.exits import EXIT_OK, EXIT_USAGE
from convlab.embed import HashEmbedder
from convlab.paths import REPO_ROOT, sample_data_path
from tests.helpers import locomo_file

SAMPLE = sample_data_path() / "transcripts"
LONGMEMEVAL = REPO_ROOT / "tests" / "fixtures" / "longmemeval" / "longmemeval_fixture.json"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("edges") / "store"
    assert main(["index", str(SAMPLE), "--store", str(out), "--embedder", "hash", "-q"]) == 0
    return out


@pytest.fixture(autouse=True)
def crash_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash report (a failing test) goes to a temporary folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _line(err: str, command: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"convlab {command}: ")
    return lines[0]


@pytest.mark.parametrize(
    "k", ["99999999999999999999", str(MAX_K + 1), "0", "-1", str(2**63), str(-(2**63))]
)
def test_absurd_k_exits_2_with_one_line(
    k: str, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "nginx", "--store", str(store), "-k", k]) == EXIT_USAGE
    line = _line(capsys.readouterr().err, "search")
    assert f"-k must be at least 1 and at most {MAX_K:,}" in line


def test_k_at_the_bound_is_fine(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["search", "nginx", "--store", str(store), "-k", str(MAX_K), "--json"]
    assert main([*argv, "--min-confidence", "0"]) == EXIT_OK
    assert capsys.readouterr().out.count("\n") >= 1


def test_a_query_that_is_not_utf8_exits_2(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Python decodes argv with surrogateescape: the byte 0xff arrives as '\udcff'
    assert main(["search", "ngin\udcffx", "--store", str(store)]) == EXIT_USAGE
    line = _line(capsys.readouterr().err, "search")
    assert "the query is not UTF-8 text (character 5)" in line


def test_a_real_process_given_non_utf8_bytes_exits_2(store: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "convlab", "search", b"\xff\xfe nginx", "--store", str(store)],
        cwd=REPO_ROOT,
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == EXIT_USAGE, done.stderr[-2000:]
    assert done.stderr.decode().splitlines() == [
        "convlab search: the query is not UTF-8 text (character 1)"
    ]


def _qrels(path: Path, query: str) -> Path:
    record = {"query_id": query, "doc_id": "d1", "grade": 2, "assessor": "a", "time": "t"}
    path.write_text(json.dumps(record) + "\n")
    return path


def test_agreement_on_nothing_in_common_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _qrels(tmp_path / "a.jsonl", "q1"), _qrels(tmp_path / "b.jsonl", "q2")
    assert main(["judge", "agreement", str(a), str(b)]) == EXIT_USAGE
    line = _line(capsys.readouterr().err, "judge")
    assert line == (
        f"convlab judge: {a} and {b}: the two qrels have no graded (query, doc) in common"
    )


@pytest.fixture
def hash_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison embeds with the hash embedder (these tests are about the data)."""
    monkeypatch.setattr(
        convlab.embed, "minilm_embedder", lambda backend="torch", **_: HashEmbedder(16)
    )  # options (the device) have no effect


UTTERANCES = [("Ann", "I adopted a cat named Tom"), ("Bo", "How old is Tom?"), ("Ann", "Two")]


def _eval(data: Path, tmp_path: Path) -> list[str]:
    return ["--data", str(data), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "c")]


@pytest.mark.usefixtures("hash_model")
@pytest.mark.parametrize("program", ["eval.run", "convlab eval"])
def test_locomo_whose_evidence_points_nowhere_exits_2(
    program: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qa = [{"question": "cat?", "answer": "Tom", "evidence": ["D9:9"], "category": 1}]
    data = locomo_file(tmp_path / "nowhere.json", UTTERANCES, qa)
    argv = [*_eval(data, tmp_path), "--strategies", "message", "--budgets", "128"]
    if program == "eval.run":
        assert eval_cli.main(argv) == EXIT_USAGE
    else:
        assert main(["eval", *argv]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "Traceback" not in err
    assert f"{data}:0: none of its 1 queries has a relevant doc (query 'd1:q0': " in err


@pytest.mark.usefixtures("hash_model")
@pytest.mark.parametrize(
    ("change", "says"),
    [
        (
            lambda q: q["haystack_dates"].pop(),
            "question {i} ({qid}): haystack_session_ids, haystack_dates and haystack_sessions "
            "differ in length",
        ),
        (lambda q: q["haystack_session_ids"].append("extra"), "differ in length"),
        (lambda q: q.__setitem__("answer_session_ids", 5), "'answer_session_ids' is not a list"),
        (lambda q: q["haystack_session_ids"].__setitem__(0, 7), "session id is not a string"),
    ],
)
def test_longmemeval_whose_every_question_is_broken_exits_2(
    change: object, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = json.loads(LONGMEMEVAL.read_text())
    for q in items:
        change(q)  # type: ignore[operator]
    data = tmp_path / "lme.json"
    data.write_text(json.dumps(items))
    argv = ["eval", *_eval(data, tmp_path), "--strategies", "message", "--budgets", "128"]
    assert main(argv) == EXIT_USAGE
    line = _line(capsys.readouterr().err, "eval")
    assert f"{data}:0: no labelled query to evaluate; the first record left out: " in line
    assert says.format(i=0, qid=items[0]["question_id"]) in line


def test_one_broken_longmemeval_question_is_left_out_and_counted(tmp_path: Path) -> None:
    from convlab.loaders.longmemeval import read_longmemeval

    items = json.loads(LONGMEMEVAL.read_text())
    items[0]["answer_session_ids"] = 5  # today: TypeError: 'int' object is not iterable
    data = tmp_path / "lme.json"
    data.write_text(json.dumps(items))
    corpus, labels = read_longmemeval(data)
    assert labels.report["questions"] == len(items) - 1
    assert corpus.report.skipped["reason"].to_list() == [
        f"question 0 ({items[0]['question_id']}): 'answer_session_ids' is not a list of strings; "
        "expected a LongMemEval JSON list of questions with question_id, question, answer, "
        "haystack_session_ids, haystack_dates, haystack_sessions and answer_session_ids"
    ]
