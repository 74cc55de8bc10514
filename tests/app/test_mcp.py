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


async def _session_calls(store: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Start `convlab mcp` as a subprocess and make ``calls`` through one client session."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "convlab", "mcp", "--store", str(store)], env=env
    )
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

    hits = _payload(found)["hits"]
    assert len(hits) == 2
    assert [h["rank"] for h in hits] == [1, 2]
    assert {h["conversation_id"] for h in hits} == {"amp-faiss-choice"}
    assert any(h["match"]["text"].startswith(ANSWER) for h in hits)
    # the store's own system (the default fusion), as `convlab search` and open_store run it
    assert {h["score_kind"] for h in hits} == {"convex"}
    from convlab.retrieval import SearchOptions
    from convlab.store import open_store

    scoped = SearchOptions(k=2, conversations=("amp-faiss-choice",))
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
    assert sum(h["tokens"] for h in ctx["hits"]) == ctx["tokens_used"]

    assert getattr(bad, "is_error", getattr(bad, "isError", False))
    assert "nonsense" in bad.content[0].text


def test_mcp_without_a_store_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "--store", str(tmp_path / "none")]) == EXIT_USAGE
    assert capsys.readouterr().err.startswith("convlab mcp: no index at ")
