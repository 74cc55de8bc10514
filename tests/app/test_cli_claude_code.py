"""A Claude Code history through ``convlab index`` and ``search``/``show`` (the hash embedder).

The history is tests/fixtures/claude_code (described in tests/loaders/test_claude_code.py): a
webapp project with a session ``5b1c0de2...`` and its sub-agent ``agent-a7c11e5``, an api
project with a session ``7e3f9a10...``, two Warmup sidechains and a sub-agent ``agent-ffdd9610``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_NO_RESULTS, EXIT_OK, EXIT_USAGE

HISTORY = Path(__file__).parent.parent / "fixtures" / "claude_code"
S1 = "5b1c0de2-7a41-4c3e-9f10-2d6e8a0c1b01"
S2 = "7e3f9a10-1c2d-4e5f-8a9b-0c1d2e3f4a02"


def _index(out: Path, *extra: str) -> Path:
    argv = ["index", str(HISTORY), "--store", str(out), "--embedder", "hash", "-q", *extra]
    assert main(argv) == EXIT_OK
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The history indexed with tool output (``--include tool-output``)."""
    return _index(tmp_path_factory.mktemp("cc") / "store", "--include", "tool-output")


@pytest.fixture(scope="module")
def plain_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The history indexed with the default policy (no tool output)."""
    return _index(tmp_path_factory.mktemp("cc") / "plain")


def _search(capsys: pytest.CaptureFixture[str], store: Path, *argv: str) -> list[dict[str, str]]:
    """The JSON hits of ``search ARGV`` (BM25 unless ARGV says ``--dense``)."""
    capsys.readouterr()
    mode = [] if "--dense" in argv else ["--lexical"]
    argv = tuple(a for a in argv if a != "--dense")
    code = main(["search", *argv, "--store", str(store), *mode, "--json", "--min-confidence", "0"])
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    return [json.loads(line) for line in out.splitlines()]


def test_sub_agent_turns_are_searchable(
    plain_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "pessimistic" is said once, by the sub-agent's last reply (line 4 of its file)
    (hit,) = _search(capsys, plain_store, "pessimistic operator", "-k", "5")
    assert hit["conversation_id"] == f"{S1}:agent-a7c11e5"
    assert hit["doc_id"] == f"{S1}:agent-a7c11e5:t0"
    assert hit["source_path"].endswith(f"{S1}/subagents/agent-a7c11e5.jsonl")
    assert hit["source_line"] == 4
    assert hit["title"] == "Search hex.pm for the latest credo and dialyxir versions"


def test_warmups_are_not_folded_into_the_session(
    plain_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the Warmup replies have no real prompt: no turn, no unit; before, the Warmup file's reply
    # was turn 0 of session 7e3f... and the session's source was the Warmup file
    assert main(["search", "warmup", "--store", str(plain_store), "--lexical"]) == EXIT_NO_RESULTS
    hits = _search(capsys, plain_store, "cursor pagination orders", "--conversation", S2)
    assert {h["source_path"] for h in hits} == {str(HISTORY / "-home-ann-src-api" / f"{S2}.jsonl")}


def test_slash_command_prompts_are_searchable(
    plain_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "remaining tasks" is only in the arguments of "/compact and continue ..." (line 13)
    hits = _search(capsys, plain_store, "remaining tasks", "--role", "user")
    assert [(h["conversation_id"], h["source_line"]) for h in hits] == [(S1, 13)]


@pytest.mark.parametrize(
    ("project", "conversations"),
    [
        ("api", {S2, f"{S2}:agent-ffdd9610"}),  # a name: the last component
        ("/home/ann/src/api", {S2, f"{S2}:agent-ffdd9610"}),  # a path: exactly
        ("/home/ann/src", {S1, f"{S1}:agent-a7c11e5", S2, f"{S2}:agent-ffdd9610"}),  # under it
        ("webapp", {S1, f"{S1}:agent-a7c11e5"}),
    ],
)
def test_project_filter(
    project: str, conversations: set[str], plain_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # dense search returns every turn for -k 20 (the history has 6); the filter keeps some
    hits = _search(capsys, plain_store, "versions", "--dense", "-k", "20", "--project", project)
    assert {h["conversation_id"] for h in hits} == conversations


def test_an_unknown_project_is_refused_naming_the_known_ones(
    plain_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["search", "the", "--store", str(plain_store), "--project", "src"]
    assert main(argv) == EXIT_USAGE  # "src" is no project's last component
    err = capsys.readouterr().err
    assert "its projects: /home/ann/src/api, /home/ann/src/webapp" in err


def test_role_tool_matches_tool_output_indexed_on_request(
    store: Path, plain_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "results" is only in the sub-agent's WebSearch result (line 3 of its file), of the two
    # tool outputs; the sub-agent's prompt says "Search", but it is a user unit
    hits = _search(capsys, store, "web search results", "--role", "tool")
    assert {h["role"] for h in hits} == {"tool"}  # only tool output passes the filter
    top = hits[0]  # the store's default system: BM25 views rank the one holding "results" first
    assert (top["conversation_id"], top["role"], top["source_line"]) == (
        f"{S1}:agent-a7c11e5",
        "tool",
        3,
    )
    argv = ["search", "credo", "--store", str(plain_store), "--role", "tool"]
    assert main(argv) == EXIT_USAGE
    assert "holds no tool output; index it with `convlab index --include tool-output" in (
        capsys.readouterr().err
    )


def test_unique_prefixes_name_a_conversation(
    plain_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "7e3f" starts the session and its three sidechains: the session is meant
    assert main(["show", "7e3f", "--store", str(plain_store)]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{S2}: Cursor pagination for the orders API"
    assert "project: /home/ann/src/api" in out
    assert main(["show", f"{S1}:agent-a7", "--store", str(plain_store)]) == EXIT_OK
    assert f"sub-agent of: {S1}" in capsys.readouterr().out
    hits = _search(capsys, plain_store, "versions", "--dense", "-k", "20", "--conversation", "5b1c")
    assert {h["conversation_id"] for h in hits} == {S1}
    # a hit's doc id with its conversation given by a unique start: that turn, marked
    assert main(["show", "7e3f:t0", "--around", "0", "--store", str(plain_store)]) == EXIT_OK
    shown = capsys.readouterr().out
    assert shown.splitlines()[0].startswith(f"{S2}: ")
    assert "== turn 0" in shown
    assert "(hit)" in shown


@pytest.mark.parametrize("command", ["show", "search"])
def test_ambiguous_and_unknown_prefixes_exit_2(
    command: str, plain_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def run(prefix: str) -> str:
        argv = ["show", prefix] if command == "show" else ["search", "x", "--conversation", prefix]
        assert main([*argv, "--store", str(plain_store)]) == EXIT_USAGE
        return capsys.readouterr().err

    err = run(f"{S2}:agent-")
    assert (
        f"'{S2}:agent-' is the start of 2 conversations: {S2}:agent-b2c3d4e5, {S2}:agent-ffdd9610"
        in err
    )
    assert f"no conversation 'ffff' in {plain_store}" in run("ffff")
    # the sub-agent and the compaction worker of session 5b1c... both start with "agent-a"
    assert "is the start of 2 conversations" in run(f"{S1}:agent-a")
