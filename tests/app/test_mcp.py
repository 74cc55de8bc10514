"""`convlab mcp`: the server answers the SDK's own client over stdio, as agents call it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK, EXIT_USAGE
from convlab.paths import sample_data_path

pytest.importorskip("mcp", reason="convlab-memory[mcp] is not installed")  # `.[dev]` has it

REPO = Path(__file__).resolve().parents[2]
ANSWER = "Use IndexHNSWFlat with M around 32 and efConstruction 200"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample indexed with the hash embedder."""
    out = tmp_path_factory.mktemp("mcp") / "store"
    src = sample_data_path() / "transcripts"
    assert main(["index", str(src), "--store", str(out), "--embedder", "hash", "-q"]) == EXIT_OK
    return out


def _payload(result: Any) -> Any:
    """A tool result's JSON (its text content), failing on an error result."""
    error = getattr(result, "is_error", getattr(result, "isError", False))
    text = result.content[0].text
    assert not error, text
    return json.loads(text)


async def _session_calls(
    store: Path, calls: list[tuple[str, dict[str, Any]]], command: list[str] | None = None
) -> list[Any]:
    """Start `convlab mcp` (or ``command``) as a subprocess and make ``calls`` in one session."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    command = command or [sys.executable, "-m", "convlab", "mcp", "--store", str(store)]
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    out: list[Any] = []
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            out.append(sorted(t.name for t in (await session.list_tools()).tools))
            for name, arguments in calls:
                out.append(await session.call_tool(name, arguments))
    return out


def test_an_sdk_client_lists_and_calls_the_tools_over_stdio(store: Path) -> None:
    import anyio

    query = "IndexHNSWFlat efConstruction efSearch"
    calls = [
        ("search", {"query": query, "k": 2, "conversation": "amp-faiss-choice"}),
        ("show", {"target": "amp-faiss-choice:t1", "around": 1}),
        ("context", {"query": query, "budget": 60, "k": 3, "conversation": "amp-faiss-choice"}),
        ("context", {"query": query, "budget": 60, "policy": "nonsense"}),
    ]
    names, found, shown, context, bad = anyio.run(_session_calls, store, calls)
    assert names == ["context", "search", "show"]

    assert getattr(found, "structured_content", getattr(found, "structuredContent", None)) is None
    assert len(found.content) == 1  # the reply once, as text: no structured copy of it
    payload = _payload(found)
    assert 0.0 <= payload["confidence"] <= 1.0
    assert payload["confident"] == (payload["confidence"] >= payload["threshold"])
    hits = payload["hits"]
    assert len(hits) == 2
    assert [h["rank"] for h in hits] == [1, 2]
    assert {h["conversation_id"] for h in hits} == {"amp-faiss-choice"}
    assert any(h["match"]["text"].startswith(ANSWER) for h in hits)
    # the store's own system (the default fusion), as `convlab search` and open_store run it
    assert {h["score_kind"] for h in hits} == {"convex"}
    from convlab.retrieval import SearchOptions
    from convlab.store import open_store

    scoped = SearchOptions.of(k=2, conversations=("amp-faiss-choice",))
    expected = open_store(store).search(query, k=2, options=scoped)
    assert [h["doc_id"] for h in hits] == expected["doc_id"].to_list()

    got = _payload(shown)
    assert got["title"] == "Choosing a FAISS index"
    # turn 1 of the FAISS session and one *message* on each side (read by hand: 2 + 2 + 2
    # messages with text: turn 0's last, turn 1's two, turn 2's first), turn 1's marked as the
    # hit; line 5 is the assistant's answer (message 4)
    assert [m["turn"] for m in got["messages"]] == [0, 1, 1, 2]
    assert [m["is_hit"] for m in got["messages"]] == [False, True, True, False]
    answer = got["messages"][2]
    assert (answer["message_index"], answer["source_line"]) == (4, 5)
    assert answer["text"].startswith(ANSWER)

    ctx = _payload(context)
    assert 0 < ctx["tokens_used"] <= 60
    assert ctx["text"].startswith("[amp-faiss-choice · turn ")
    assert "confidence" in ctx
    assert sum(h["tokens"] for h in ctx["hits"]) == ctx["tokens_used"]

    assert getattr(bad, "is_error", getattr(bad, "isError", False))
    assert "nonsense" in bad.content[0].text


def test_mcp_without_a_store_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "--store", str(tmp_path / "none")]) == EXIT_USAGE
    assert capsys.readouterr().err.startswith("convlab mcp: no index at ")


def test_replies_fit_max_chars_and_search_and_context_share_one_default_k(store: Path) -> None:
    import anyio

    query = "faiss index"
    calls = [
        ("search", {"query": query}),
        ("context", {"query": query, "budget": 2000}),
        ("search", {"query": query, "max_chars": 1200}),
    ]
    _, found, context, small = anyio.run(_session_calls, store, calls)
    # the sample holds more than five docs about FAISS: both tools draw the same five
    assert len(_payload(found)["hits"]) == 5
    ranked = _payload(context)["hits"]
    assert [h["rank"] for h in ranked] == [1, 2, 3, 4, 5]
    assert [h["doc_id"] for h in ranked] == [h["doc_id"] for h in _payload(found)["hits"]]
    text = small.content[0].text
    assert len(text) <= 1200
    fitted = _payload(small)
    assert fitted["truncated"] is True
    assert 1 <= len(fitted["hits"]) < 5
    assert fitted["omitted"] == {"hits": 5 - len(fitted["hits"])}
    # what was kept is the first hits, their ids whole (show still finds them)
    whole = _payload(found)["hits"][: len(fitted["hits"])]
    assert [h["doc_id"] for h in fitted["hits"]] == [h["doc_id"] for h in whole]
    assert [h["unit_id"] for h in fitted["hits"]] == [h["unit_id"] for h in whole]


def test_context_text_is_ranked_by_relevance_not_grouped_by_conversation(store: Path) -> None:
    from convlab.app.cli.mcp_server import StoreTools

    tools = StoreTools(store)
    got = tools.context("faiss index efConstruction", budget=4000, k=5)
    firsts = [h["doc_id"] for h in got["hits"] if not h["skipped"]]
    conversations = [d.rsplit(":", 1)[0] for d in firsts]
    # the text starts with the best hit's conversation, and follows the hits' order
    headers = [line for line in got["text"].splitlines() if line.startswith("[")]
    seen = list(dict.fromkeys(h[1:].split(" · ")[0] for h in headers))
    assert seen == list(dict.fromkeys(conversations))


def test_mcp_install_registers_this_python_and_the_registered_command_serves(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import anyio

    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text('{"mcpServers": {"other": {"command": "x"}}, "k": 1}')
    args = ["mcp", "install", "--scope", "project", "--dir", str(project), "--store", str(store)]
    assert main(args) == EXIT_OK
    assert "wrote " in capsys.readouterr().out
    config = json.loads((project / ".mcp.json").read_text())
    assert config["k"] == 1
    assert config["mcpServers"]["other"] == {"command": "x"}
    server = config["mcpServers"]["convlab"]
    assert server["type"] == "stdio"
    assert server["command"] == sys.executable
    assert Path(server["command"]).is_absolute()
    assert server["args"] == ["-m", "convlab", "mcp", "--store", str(store.absolute())]
    # Claude Code runs exactly the registered command: start it with the SDK's client
    command = [server["command"], *server["args"]]
    calls = [("search", {"query": "IndexHNSWFlat efConstruction", "k": 1})]
    names, found = anyio.run(_session_calls, store, calls, command)
    assert names == ["context", "search", "show"]
    assert len(_payload(found)["hits"]) == 1

    assert main(["mcp", "install", "--scope", "user", "--store", str(store)]) == EXIT_OK
    line = capsys.readouterr().out.splitlines()[0]
    assert line == (
        f"claude mcp add --scope user convlab -- {sys.executable} -m convlab mcp --store "
        f"{store.absolute()}"
    )


def test_mcp_install_refuses_an_mcp_json_that_is_not_json(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".mcp.json").write_text("{not json")
    args = ["mcp", "install", "--dir", str(tmp_path), "--store", str(store)]
    assert main(args) == EXIT_USAGE
    assert ".mcp.json:1: not JSON" in capsys.readouterr().err
    assert (tmp_path / ".mcp.json").read_text() == "{not json"  # never overwritten
