"""Why a hit matched and what it brings back: `search --budget/--policy`, the match line, `show
--around`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convlab.app.cli import main
from convlab.app.display import hit_lines
from convlab.app.exits import EXIT_OK, EXIT_USAGE
from convlab.paths import sample_data_path
from tests.helpers import index_argv, locomo_file

# the FAISS session of the sample, read by hand: line 3 is the user's "We do need low latency.
# How do we set up HNSW?" (message 2, turn 1), line 5 the assistant's answer (message 4), two
# chunks: "Use IndexHNSWFlat ... pick it." and the code line
ANSWER = (
    "Use IndexHNSWFlat with M around 32 and efConstruction 200, and raise efSearch well above "
    "the default of 16; measure recall at 10 against the exact index to pick it."
)
FAISS = ["--conversation", "amp-faiss-choice"]


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample indexed with the hash embedder."""
    out = tmp_path_factory.mktemp("ctx") / "store"
    src = sample_data_path() / "transcripts"
    assert main(index_argv(src, str(out))) == EXIT_OK
    return out


def _search(store: Path, query: str, *extra: str) -> list[str]:
    return ["search", query, "--store", str(store), *extra]


def test_the_human_output_shows_the_matching_message_and_its_line(
    sample_store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the query's terms (efconstruct, efsearch, recal) are all in the answer's first chunk,
    # which a dense hit's unit holds after the question it was embedded with
    monkeypatch.setenv("COLUMNS", "100")
    query = "efConstruction efSearch recall"
    assert main(_search(sample_store, query, *FAISS, "-k", "1")) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    match = [i for i, line in enumerate(lines) if line.startswith("   match: ")]
    assert len(match) == 1
    at = next(i for i, line in enumerate(lines) if line.startswith("   at: "))
    shown = " ".join(line[10:].strip() for line in lines[match[0] : at])
    assert shown.startswith(f"[assistant] {ANSWER} ")  # then the message's code line
    assert lines[at].endswith(":5 (message 4)")  # the answer's file:line, as the match
    assert main([*_search(sample_store, query, *FAISS, "-k", "1"), "--json"]) == EXIT_OK
    (hit,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (hit["message_index"], hit["source_line"], hit["role"]) == (4, 5, "assistant")
    assert {k: hit["match"][k] for k in ("message_index", "role")} == {
        "message_index": 4,
        "role": "assistant",
    }
    assert hit["match"]["text"].startswith(f"{ANSWER} ")


def test_query_terms_are_highlighted_on_a_terminal_only() -> None:
    row = {
        "rank": 1,
        "score": 0.5,
        "title": "t",
        "conversation_id": "c",
        "timestamp": None,
        "turn": 0,
        "question": "q",
        "role": "user",
        "snippet": "",
        "match": {"chunk_id": "x", "role": "assistant", "text": "The support groups met."},
        "source_path": "/a.jsonl",
        "source_line": 1,
        "message_index": 0,
    }
    on = hit_lines([row], 80, query="a support group", color=True)  # type: ignore[list-item]
    assert (
        on[2] == "   match: [assistant] The \x1b[1;31msupport\x1b[0m \x1b[1;31mgroups\x1b[0m met."
    )
    off = hit_lines([row], 80, query="a support group")  # type: ignore[list-item]
    assert off[2] == "   match: [assistant] The support groups met."


def test_a_long_chunk_is_cut_around_the_query_terms(
    capsys: pytest.CaptureFixture[str],
) -> None:
    words = " ".join(f"w{i}" for i in range(200))
    row = {
        "rank": 1,
        "score": 0.5,
        "title": "t",
        "conversation_id": "c",
        "timestamp": None,
        "turn": 0,
        "question": "q",
        "role": "user",
        "snippet": "",
        "match": {"chunk_id": "x", "role": "user", "text": f"{words} needle {words}"},
        "source_path": "/a.jsonl",
        "source_line": 1,
        "message_index": 0,
    }
    lines = hit_lines([row], 60, query="needle")  # type: ignore[list-item]
    match = lines[2:-1]
    assert len(match) == 5  # MATCH_LINES
    assert any("needle" in line for line in match)
    assert match[0].startswith("   match: [user] … ")
    assert all(len(line) <= 60 for line in lines)


def test_budget_brings_back_each_hits_context_in_json(
    sample_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the assistant's answer in turn 1: turn_pair embedded it with the user's S0 (line 3) and
    # the answer's S0 (line 5); with budget 1000 both come back, as two pieces
    argv = _search(sample_store, "IndexHNSWFlat efConstruction efSearch", *FAISS)
    argv += ["--role", "assistant", "-k", "1", "--json", "--budget", "1000"]
    assert main(argv) == EXIT_OK
    (hit,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    ctx = hit["context"]
    assert (ctx["policy"], ctx["budget"], ctx["skipped"]) == ("unit", 1000, False)
    pieces = ctx["pieces"]
    assert [(p["role"], p["message_index"], p["source_line"]) for p in pieces[:2]] == [
        ("user", 2, 3),
        ("assistant", 4, 5),
    ]
    assert pieces[0]["text"] == "We do need low latency."
    assert pieces[1]["text"].startswith(ANSWER)
    assert all(p["source_path"].endswith("transcript.jsonl") for p in pieces)
    assert pieces[1]["timestamp"] == "2026-04-10T09:04:00+00:00"
    assert ctx["tokens"] == sum(p["tokens"] for p in pieces) > 0


def test_the_budget_holds_over_all_hits_and_the_policy_is_used(
    sample_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for budget in (1, 40, 300):
        argv = _search(sample_store, "cache invalidation", "-k", "8", "--json")
        assert main([*argv, "--budget", str(budget), "--policy", "window"]) == EXIT_OK
        hits = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert len(hits) == 8
        assert {h["context"]["policy"] for h in hits} == {"window"}
        assert sum(h["context"]["tokens"] for h in hits) <= budget
        chunks = [c for h in hits for p in h["context"]["pieces"] for c in p["chunk_ids"]]
        assert len(chunks) == len(set(chunks))  # each chunk comes back once
        if budget == 1:  # no piece is one token
            assert all(h["context"]["skipped"] for h in hits)


def test_budget_context_in_the_human_output(
    sample_store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    argv = _search(sample_store, "IndexHNSWFlat efConstruction efSearch", *FAISS)
    assert main([*argv, "--role", "assistant", "-k", "1", "--budget", "1000"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "   context: " in out
    assert "tokens (unit policy)" in out
    assert "     [turn 1 · 2026-04-10 09:03 · user · " in out
    assert "     We do need low latency." in out


@pytest.mark.parametrize("budget", ["-1", "0"])
def test_a_budget_under_one_token_is_a_usage_error(
    sample_store: Path, capsys: pytest.CaptureFixture[str], budget: str
) -> None:
    assert main([*_search(sample_store, "x"), "--budget", budget]) == EXIT_USAGE
    assert "--budget must be at least 1 token" in capsys.readouterr().err


def test_show_around_a_turn_hit(sample_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["show", "amp-faiss-choice:t1", "--around", "1", "--store", str(sample_store)]
    assert main(argv) == EXIT_OK
    heads = [line for line in capsys.readouterr().out.splitlines() if line.startswith("== ")]
    assert heads == [
        "== turn 0 · 2026-04-10 09:01",
        "== turn 1 · 2026-04-10 09:03 (hit)",
        "== turn 2 · 2026-04-10 09:05",
    ]


def test_show_around_a_message_hit_and_its_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    said = [("Ann", f"line {i}") for i in range(1, 8)]
    src = locomo_file(tmp_path / "d.json", said)
    store = str(tmp_path / "s")
    assert main(index_argv(src, store)) == EXIT_OK
    capsys.readouterr()
    assert main(["show", "d1:m3", "--around", "2", "--store", store]) == EXIT_OK
    out = capsys.readouterr().out
    said_lines = [line for line in out.splitlines() if "Ann: line" in line]
    # messages 1..5 (the docs 2 before and after message 3), message 3 marked
    assert [line.split("Ann: ")[1] for line in said_lines] == [f"line {i}" for i in range(2, 7)]
    assert [line[0] for line in said_lines] == [" ", " ", ">", " ", " "]
    # a unit id shows its doc
    hit = json.loads(
        next(
            line
            for line in _json_out(capsys, ["search", "line 5", "--store", store, "--json"])
            if json.loads(line)["doc_id"] == "d1:m4"
        )
    )
    assert main(["show", hit["unit_id"], "--store", store, "--around", "0"]) == EXIT_OK
    shown = [line for line in capsys.readouterr().out.splitlines() if "Ann: line" in line]
    assert shown == ["> user  #4  Ann: line 5"]


def _json_out(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[str]:
    assert main(argv) == EXIT_OK
    return capsys.readouterr().out.splitlines()


def test_show_around_needs_a_hit(sample_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["show", "amp-faiss-choice", "--around", "1", "--store", str(sample_store)]
    assert main(argv) == EXIT_USAGE
    assert "--around needs a hit" in capsys.readouterr().err
