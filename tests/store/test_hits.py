"""A hit's match: the best message of its doc, its file and line (the text record, not thinking).

The session below is one turn of six messages, written by hand: the prompt (line 1), an
assistant message split over a thinking record (line 2) and its text record (line 3), a tool
call (line 4), its output (line 5) and the reply that holds the answer (line 6), then a closing
remark (line 7).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK
from convlab.store.hits import matched_messages

SESSION = "9d2f0c11-0000-4000-8000-000000000001"


def _record(n: int, kind: str, content: object, mid: str | None = None) -> str:
    message: dict[str, object] = {"role": kind, "content": content}
    if mid is not None:
        message["id"] = mid
    return json.dumps(
        {
            "parentUuid": f"u{n - 1}" if n > 1 else None,
            "isSidechain": False,
            "cwd": "/home/ann/src/app",
            "sessionId": SESSION,
            "uuid": f"u{n}",
            "timestamp": f"2026-03-01T10:00:0{n}.000Z",
            "type": kind,
            "message": message,
        }
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hits")
    history = root / "history"
    history.mkdir()
    lines = [
        _record(1, "user", "Check the build configuration please."),
        _record(2, "assistant", [{"type": "thinking", "thinking": "Let me look."}], "m2"),
        _record(3, "assistant", [{"type": "text", "text": "Looking at the build now."}], "m2"),
        _record(
            4,
            "assistant",
            [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
            "m4",
        ),
        _record(5, "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "a b"}]),
        _record(
            6,
            "assistant",
            [{"type": "text", "text": "The exporter we configured is zipkin on port 9411."}],
            "m6",
        ),
        _record(7, "assistant", [{"type": "text", "text": "Anything else to check?"}], "m7"),
    ]
    real = root / "elsewhere" / f"{SESSION}.jsonl"  # the history holds a link to it
    real.parent.mkdir()
    real.write_text("\n".join(lines) + "\n")
    (history / f"{SESSION}.jsonl").symlink_to(real)
    out = root / "store"
    argv = ["index", str(history), "--store", str(out), "--embedder", "hash", "-q"]
    assert main(argv) == EXIT_OK
    return out


def test_the_match_is_the_answering_message_and_at_is_its_text_record(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    capsys.readouterr()
    argv = ["search", "which exporter did we configure", "--store", str(store), "-k", "1"]
    argv += ["--min-confidence", "0"]  # the subject is the match, not the confidence
    assert main([*argv, "--json"]) == EXIT_OK
    (hit,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert hit["doc_id"] == f"{SESSION}:t0"  # the whole turn is the doc
    # the reply is message 4 (0 prompt, 1 thinking+text, 2 tool call, 3 tool output), line 6
    assert (hit["message_index"], hit["source_line"], hit["role"]) == (4, 6, "assistant")
    assert hit["match"]["text"] == "The exporter we configured is zipkin on port 9411."
    # the path as it was indexed: the link in the history, not its target
    assert hit["source_path"] == str(store.parent / "history" / f"{SESSION}.jsonl")
    monkeypatch.setenv("COLUMNS", "100")
    assert main(argv) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert "   match: [assistant] The exporter we configured is zipkin on port 9411." in lines
    assert any(line.startswith("   at: ") and line.endswith(":6 (message 4)") for line in lines)


def test_a_message_split_over_records_is_at_its_first_record_that_is_not_thinking(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from convlab.store import Store

    messages = Store(store).frame("messages").sort("message_index")
    # message 1: thinking on line 2, its text on line 3; the others one record each
    assert messages["source_line"].to_list() == [1, 3, 4, 5, 6, 7]
    capsys.readouterr()
    argv = ["show", f"{SESSION}:m1", "--around", "1", "--store", str(store)]
    assert main(argv) == EXIT_OK
    out = capsys.readouterr().out.splitlines()
    marked = [line for line in out if line.startswith(">")]
    assert len(marked) == 1
    assert "#1" in marked[0]
    at = [line.strip() for line in out if line.strip().startswith("at: ")]
    assert len(at) == 1
    assert at[0].endswith(f"{SESSION}.jsonl:3")
    # --around counts messages: 0, 1 and 2 shown, not the turn's six
    shown = [line for line in out if line[:1] in (">", " ") and "#" in line[:20]]
    assert [line.split("#")[1].split()[0] for line in shown] == ["0", "1", "2"]


def test_the_match_leaves_a_target_without_the_terms_for_the_units_message_that_has_them() -> None:
    # a unit of the prompt (message 0) embedded with the answer's first sentence (message 1)
    chunks = pl.DataFrame(
        {
            "chunk_id": ["c:t0:user:s0", "c:t0:assistant:s0"],
            "message_index": [0, 1],
            "role": ["user", "assistant"],
            "text": ["How do we install it?", "Use zipkin exporters on port 9411."],
        }
    )
    hits = pl.DataFrame(
        {
            "match_message_index": [0, 0],
            "match_chunk_ids": [["c:t0:user:s0", "c:t0:assistant:s0"], ["c:t0:user:s0"]],
        }
    )
    # the first hit's target holds no term of the query, its unit's other message does; the
    # second hit's unit holds only its target
    assert matched_messages(hits, chunks, "zipkin exporter") == [1, 0]
    # a target that holds a term stays, whoever holds more
    assert matched_messages(hits, chunks, "install the zipkin exporter") == [0, 0]
    # a search of user messages only keeps a match among them
    assert matched_messages(hits, chunks, "zipkin exporter", ("user",)) == [0, 0]
