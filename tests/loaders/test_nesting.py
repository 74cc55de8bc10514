"""Deeply nested JSON: a LoadError naming file and line (strict) or a counted skip, per reader.

Every case below raised ``RecursionError`` out of ``load()`` before the shared JSON helpers of
:mod:`convlab.loaders.base` (issue 16, defect 3). Each file holds one good message beside the
deep value, so the tests also check that the rest of the file is still read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convlab.loaders import LoadError, load
from convlab.loaders.jsontext import MAX_DEPTH, NestingError, json_text, parse_json

DEPTH = 5000  # well past orjson's 1024 levels and Python's recursion limit of 1000
DEEP = "[" * DEPTH + "]" * DEPTH  # JSON text
NESTED = f"JSON nested deeper than {MAX_DEPTH} levels"


def deep_value(depth: int) -> list[object]:
    """A Python list nested ``depth`` levels (built without recursion)."""
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def reasons(corpus) -> list[tuple[str, int, str]]:  # type: ignore[no-untyped-def]
    return [(Path(p).name, line, r) for p, line, r in corpus.report.skipped.rows()]


# -- whole-file JSON: the file cannot be parsed, so it is one skip at the line orjson names ------


def _locomo(deep: str) -> str:
    turn = '{"speaker": "Ann", "dia_id": "D1:1", "text": "hi"}'
    return (
        '[{"sample_id": "s1", "conversation": {"speaker_a": "Ann", "speaker_b": "Bo",'
        f' "session_1": [{turn}]}}, "qa": [], "x": {deep}}}]'
    )


WHOLE_FILES = {
    "locomo": ("locomo.json", _locomo),
    "openai": (
        "chat.json",
        lambda d: '[{"role": "user", "content": "hi"}, {"role": "assistant", "x": ' + d + "}]",
    ),
    "anthropic": (
        "claude.json",
        lambda d: (
            '{"system": "s", "messages": [{"role": "user", "content": "hi"}], "x": ' + d + "}"
        ),
    ),
    "sharegpt": (
        "share.json",
        lambda d: '[{"conversations": [{"from": "human", "value": "hi"}], "x": ' + d + "}]",
    ),
    "chatgpt": (
        "export.json",
        lambda d: '[{"mapping": {}, "current_node": "a",\n"x": ' + d + "}]",
    ),
}


@pytest.mark.parametrize("fmt", sorted(WHOLE_FILES))
def test_deep_whole_file_json_is_a_load_error_or_a_skip(tmp_path: Path, fmt: str) -> None:
    name, make = WHOLE_FILES[fmt]
    f = tmp_path / name
    f.write_text(make(DEEP))
    line = 2 if fmt == "chatgpt" else 1  # orjson names the line the limit is passed on
    with pytest.raises(LoadError, match=rf"{name}:{line}: {NESTED}") as info:
        load(f, strict=True)
    assert (info.value.line, info.value.reason) == (line, NESTED)
    c = load(f)
    assert c.messages.height == 0
    assert reasons(c) == [(name, line, NESTED)]
    assert c.report.files["source_format"].to_list() == [fmt]


@pytest.mark.parametrize("fmt", sorted(WHOLE_FILES))
def test_shallow_nesting_still_loads(tmp_path: Path, fmt: str) -> None:
    # 200 levels: under every limit, the file reads as before
    name, make = WHOLE_FILES[fmt]
    f = tmp_path / name
    f.write_text(make("[" * 200 + "]" * 200))
    c = load(f, strict=True)
    assert c.report.n_skipped == 0
    if fmt != "chatgpt":  # the chatgpt file has an empty mapping
        assert "hi" in c.blocks["text"].to_list()


# -- tool-call arguments: JSON text inside a record; that record is skipped, the rest read -------


def _openai_line(args: str) -> str:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": args}}
    msgs = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "assistant", "content": "done"},
    ]
    return json.dumps({"messages": msgs})


def _codex_lines(args: str) -> list[str]:
    meta = {"type": "session_meta", "payload": {"id": "cx1"}}
    user = {
        "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": [{"text": "hi"}]},
    }
    call = {
        "type": "response_item",
        "payload": {"type": "function_call", "name": "shell", "arguments": args},
    }
    done = {
        "type": "response_item",
        "payload": {"type": "message", "role": "assistant", "content": [{"text": "done"}]},
    }
    return [json.dumps(x) for x in (meta, user, call, done)]


def _amplifier_lines(args: str) -> list[str]:
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": args}}
    return [
        json.dumps({"role": "user", "content": "hi"}),
        json.dumps({"role": "assistant", "content": "", "tool_calls": [call]}),
        json.dumps({"role": "assistant", "content": "done"}),
    ]


def _sharegpt_file(args: str) -> str:
    turns = [
        {"from": "human", "value": "hi"},
        {"from": "function_call", "value": args},
        {"from": "gpt", "value": "done"},
    ]
    return json.dumps([{"conversations": turns}])


def _write_tool_file(tmp_path: Path, fmt: str, args: str) -> tuple[Path, int, str]:
    """The file, the line of the bad record and the reason prefix expected for it."""
    if fmt == "openai":
        f = tmp_path / "train.jsonl"
        f.write_text(_openai_line('{"ok": 1}') + "\n" + _openai_line(args) + "\n")
        return f, 2, "message 1: "
    if fmt == "codex":
        f = tmp_path / "rollout-1.jsonl"
        f.write_text("\n".join(_codex_lines(args)) + "\n")
        return f, 3, ""
    if fmt == "amplifier":
        d = tmp_path / "sessions" / "amp1"
        d.mkdir(parents=True)
        f = d / "transcript.jsonl"
        f.write_text("\n".join(_amplifier_lines(args)) + "\n")
        return f, 2, ""
    f = tmp_path / "share.json"
    f.write_text(_sharegpt_file(args))
    return f, 1, "turn 1: "


TOOL_FORMATS = ["amplifier", "codex", "openai", "sharegpt"]


@pytest.mark.parametrize("fmt", TOOL_FORMATS)
def test_deep_tool_arguments_skip_the_record(tmp_path: Path, fmt: str) -> None:
    f, line, where = _write_tool_file(tmp_path, fmt, DEEP)
    with pytest.raises(LoadError, match=rf"{f.name}:{line}: {where}{NESTED}"):
        load(f, strict=True)
    c = load(f)
    assert reasons(c) == [(f.name, line, f"{where}{NESTED}")]
    assert "done" in c.blocks["text"].to_list()  # the records after it are read
    assert "hi" in c.blocks["text"].to_list()


@pytest.mark.parametrize("fmt", TOOL_FORMATS)
def test_tool_arguments_deeper_than_orjson_writes_still_load(tmp_path: Path, fmt: str) -> None:
    # 300 levels: orjson parses them but refuses to write over 254; json.dumps takes over
    depth = 300
    f, _, _ = _write_tool_file(tmp_path, fmt, "[" * depth + "]" * depth)
    c = load(f, strict=True)
    calls = c.blocks.filter(c.blocks["block_type"] == "tool_call")["tool_input"].to_list()
    assert "[" * depth + "]" * depth in calls


def test_claude_code_tool_input_too_deep_to_write_back_is_a_skip(tmp_path: Path) -> None:
    # 1000 levels parse (orjson takes up to 1024) but json.dumps cannot write them back
    user = {
        "type": "user",
        "sessionId": "s1",
        "uuid": "u1",
        "message": {"role": "user", "content": "hi"},
    }
    call = {
        "type": "assistant",
        "sessionId": "s1",
        "uuid": "a1",
        "message": {
            "id": "m1",
            "content": [{"type": "tool_use", "name": "f", "input": "@DEEP@"}],
        },
    }
    done = {
        "type": "assistant",
        "sessionId": "s1",
        "uuid": "a2",
        "message": {"id": "m2", "content": [{"type": "text", "text": "done"}]},
    }
    deep = "[" * 1000 + "]" * 1000
    f = tmp_path / "s1.jsonl"
    lines = [json.dumps(x) for x in (user, call, done)]
    f.write_text("\n".join(lines).replace('"@DEEP@"', deep) + "\n")
    with pytest.raises(LoadError, match=r"s1\.jsonl:2: JSON nested"):
        load(f, strict=True)
    c = load(f)
    assert [(n, line) for n, line, _ in reasons(c)] == [("s1.jsonl", 2)]
    assert c.blocks["text"].to_list() == ["hi", "done"]


def test_amplifier_deep_metadata_is_a_skip(tmp_path: Path) -> None:
    d = tmp_path / "sessions" / "amp1"
    d.mkdir(parents=True)
    (d / "metadata.json").write_text('{"name": "t", "x": ' + DEEP + "}")
    f = d / "transcript.jsonl"
    f.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n")
    with pytest.raises(LoadError, match=rf"metadata\.json:1: {NESTED}"):
        load(f, strict=True)
    c = load(f)
    assert reasons(c) == [("metadata.json", 1, NESTED)]
    assert c.blocks["text"].to_list() == ["hi"]


# -- the shared helpers ---------------------------------------------------------------------------


def test_parse_json_names_the_line_of_the_limit() -> None:
    with pytest.raises(NestingError, match=NESTED) as info:
        parse_json(b'{\n"a":\n' + DEEP.encode() + b"}")
    assert info.value.line == 3
    # at the limit it parses; one level more does not
    assert parse_json(("[" * MAX_DEPTH + "]" * MAX_DEPTH).encode()) is not None
    with pytest.raises(NestingError):
        parse_json(("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)).encode())


def test_parse_json_keeps_what_only_the_standard_library_reads() -> None:
    # NaN, 128-bit integers and lone surrogates: orjson refuses or rounds them
    assert parse_json(b'{"n": 340282366920938463463374607431768211457}') == {"n": 2**128 + 1}
    value = parse_json(b'[NaN, "\\ud800"]')
    assert value[0] != value[0]  # NaN
    assert value[1] == "\ud800"
    # deep AND needing the fallback (NaN first): still a NestingError, never a RecursionError
    with pytest.raises(NestingError):
        parse_json(b"[NaN, " + DEEP.encode() + b"]")
    with pytest.raises(ValueError, match="Expecting"):
        parse_json(b'{"a": }')


def test_json_text_of_deep_values() -> None:
    assert json_text(deep_value(300)) == "[" * 300 + "]" * 300
    with pytest.raises(NestingError, match="JSON nested"):
        json_text(deep_value(DEPTH))
