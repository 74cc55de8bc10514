"""Bad input: a clear LoadError naming file and line in strict mode; counted skips otherwise."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from convlab.loaders import LoadError, load
from convlab.loaders.base import CorpusBuilder
from convlab.paths import text_path

SESSION = [
    {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "s1",
        "timestamp": "2026-01-01T10:00:00Z",
        "message": {"role": "user", "content": "Fix the build"},
    },
    {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "u1",
        "sessionId": "s1",
        "timestamp": "2026-01-01T10:00:05Z",
        "message": {
            "id": "m1",
            "role": "assistant",
            "content": [{"type": "text", "text": "Done."}],
        },
    },
]


def write(path: Path, lines: list[object]) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_malformed_json_line_named_in_strict_mode(tmp_path: Path) -> None:
    f = write(tmp_path / "s1.jsonl", [SESSION[0], '{"type": "assistant", broken', SESSION[1]])
    with pytest.raises(LoadError, match=r"s1\.jsonl:2: invalid JSON"):
        load(f, strict=True)
    c = load(f)
    assert c.messages.height == 2
    assert c.report.skipped.rows() == [(str(f), 2, c.report.skipped["reason"][0])]
    assert c.report.skipped["reason"][0].startswith("invalid JSON")


def test_wrong_types_and_missing_fields(tmp_path: Path) -> None:
    bad_content = {**SESSION[0], "message": {"role": "user", "content": 42}}
    no_message = {k: v for k, v in SESSION[1].items() if k != "message"}
    f = write(tmp_path / "s1.jsonl", [SESSION[0], bad_content, no_message, SESSION[1], "[1, 2]"])
    c = load(f)
    reasons = dict(zip(c.report.skipped["source_line"], c.report.skipped["reason"], strict=True))
    assert reasons == {
        2: "user message content is not a string or a list",
        3: "assistant record without a message object",
        5: "expected a JSON object, got list",
    }
    assert c.messages.height == 2


def test_odd_field_types_take_the_slow_path_and_keep_what_is_valid(tmp_path: Path) -> None:
    # typed decoding refuses these lines; the dict path reads them with the same rules
    mixed = {
        **SESSION[1],
        "uuid": "a2",
        "timestamp": 1767261605,  # epoch seconds, not ISO text
        "message": {
            "id": "m2",
            "content": ["stray string", 7, {"type": "text", "text": "Still here."}],
        },
    }
    title = {"type": "summary", "summary": ["not", "a", "string"], "leafUuid": "a1"}
    f = write(tmp_path / "s1.jsonl", [SESSION[0], mixed, title, SESSION[1]])
    c = load(f)
    # a string in a content list is text; the number is junk: a counted skip of its line
    assert c.blocks["text"].to_list() == ["Fix the build", "stray string", "Still here.", "Done."]
    assert c.report.skipped.rows() == [
        (str(f), 2, "assistant message: content block 1 is a number, not a string or an object")
    ]
    with pytest.raises(LoadError, match=r"s1\.jsonl:2: assistant message: content block 1 is"):
        load(f, strict=True)
    assert str(c.messages["timestamp"][1]) == "2026-01-01 10:00:05+00:00"
    assert c.conversations["title"].to_list() == ["Fix the build"]  # the prompt, not the list


def test_deeply_nested_line_is_a_skip_not_a_recursion_error(tmp_path: Path) -> None:
    deep = '{"type": "user", "content": ' + "[" * 5000 + "]" * 5000 + "}"
    f = write(tmp_path / "s1.jsonl", [SESSION[0], deep, SESSION[1]])
    c = load(f)
    assert c.messages.height == 2
    assert c.report.skipped["source_line"].to_list() == [2]
    assert c.report.skipped["reason"].to_list() == ["JSON nested deeper than 1024 levels"]
    with pytest.raises(LoadError, match=r"s1\.jsonl:2: JSON nested deeper than 1024 levels"):
        load(f, strict=True)


def test_unknown_block_type_is_kept_as_other(tmp_path: Path) -> None:
    odd = {
        **SESSION[1],
        "message": {
            "id": "m1",
            "role": "assistant",
            "content": [{"type": "hologram", "text": "beam"}],
        },
    }
    c = load(write(tmp_path / "s1.jsonl", [SESSION[0], odd]), strict=True)
    assert c.blocks.filter(c.blocks["block_type"] == "other")["text"].to_list() == ["beam"]


def test_invalid_utf8(tmp_path: Path) -> None:
    f = tmp_path / "s1.jsonl"
    f.write_bytes(json.dumps(SESSION[0]).encode() + b"\n" + b'{"type": "user", "x": "\xff\xfe"}\n')
    with pytest.raises(LoadError, match=r"s1\.jsonl:2:"):
        load(f, strict=True)
    assert load(f).report.n_skipped == 1


def test_directory_with_unrelated_and_empty_files(tmp_path: Path) -> None:
    write(tmp_path / "s1.jsonl", SESSION)
    (tmp_path / "notes.md").write_text("# notes\n")
    (tmp_path / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (tmp_path / "table.csv").write_text("a,b\n1,2\n")
    (tmp_path / "empty.jsonl").write_text("")
    c = load(tmp_path)
    assert c.messages.height == 2
    reasons = dict(
        zip(
            [Path(p).name for p in c.report.skipped["source_path"]],
            c.report.skipped["reason"],
            strict=True,
        )
    )
    assert reasons == {
        "empty.jsonl": "empty file",
        "notes.md": "unrecognised format",
        "pic.png": "unrecognised format",
        "table.csv": "unrecognised format",
    }
    assert c.report.files.height == 5
    with pytest.raises(LoadError, match=r"empty\.jsonl:0: empty file"):
        load(tmp_path, strict=True)


def test_huge_tool_output_is_truncated_and_noted(tmp_path: Path) -> None:
    big = {
        **SESSION[0],
        "uuid": "t1",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "x", "content": "y" * 5_000_000}],
        },
    }
    c = load(write(tmp_path / "s1.jsonl", [SESSION[0], SESSION[1], big]))
    text = c.blocks.filter(c.blocks["block_type"] == "tool_result")["text"].item()
    assert len(text) < 300_000
    assert text.endswith(CorpusBuilder.TRUNCATION_MARKER)
    assert c.report.skipped["reason"].to_list() == ["truncated tool_result block"]


def test_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file or directory"):
        load(tmp_path / "nope")


def test_tool_input_json_text_is_compact_and_takes_what_orjson_refuses() -> None:
    from convlab.loaders.jsontext import json_text

    assert json_text({"cmd": "ls -la", "é": [1, 2.5, None, True]}) == (
        '{"cmd":"ls -la","é":[1,2.5,null,true]}'
    )
    assert json_text({"n": 2**70}) == '{"n":1180591620717411303424}'  # over 64 bits
    # a lone surrogate stays as it is (the builder replaces it, see below)
    assert json_text({"s": "\ud800"}) == '{"s":"\ud800"}'


def test_lone_surrogates_in_text_are_named_in_strict_mode_and_replaced_otherwise(
    tmp_path: Path,
) -> None:
    # half a surrogate pair escaped in JSON: the standard library's parser accepts it, polars
    # cannot store it (it is not Unicode)
    f = tmp_path / "chat.json"
    f.write_text(
        '[{"conversations": [{"from": "human", "value": "hi \\ud800 there"},'
        ' {"from": "gpt", "value": "ok"}]}]'
    )
    with pytest.raises(LoadError, match=r"chat\.json:1: invalid Unicode \(a lone surrogate\)"):
        load(f, strict=True)
    c = load(f)
    assert c.blocks["text"].to_list() == ["hi \ufffd there", "ok"]
    assert c.report.skipped.rows() == [
        (str(f), 1, "lone surrogates replaced by U+FFFD in a text block")
    ]


def test_a_file_name_that_is_not_utf8_loads(tmp_path: Path) -> None:
    name = os.fsdecode(b"s\xff1.jsonl")  # Python decodes the byte as the surrogate \udcff
    write(tmp_path / name, SESSION)
    c = load(tmp_path, strict=True)
    assert c.messages.height == 2
    # stored whole (issue 25): the byte as NUL + hex, and convlab.paths.text_path opens it
    assert c.messages["source_path"][0] == str(tmp_path) + "/s\x00ff1.jsonl"
    assert text_path(c.messages["source_path"][0]) == tmp_path / name
    assert c.report.skipped.height == 0


def test_a_record_type_that_is_not_text_is_a_skip_of_that_line(tmp_path: Path) -> None:
    # found by the fuzz test: a list as a Codex record type was a TypeError for the whole file
    f = tmp_path / "rollout-1.jsonl"
    meta = {"type": "session_meta", "payload": {"id": "c1"}}
    odd = {"type": ["response_item"], "payload": {}}
    said = {"type": "event_msg", "payload": {"type": "user_message", "message": "hi"}}
    f.write_text("\n".join(json.dumps(x) for x in (meta, odd, said)) + "\n")
    c = load(f)
    assert c.report.skipped.rows() == [(str(f), 2, "record type is not text (list)")]
    assert c.blocks["text"].to_list() == ["hi"]
    with pytest.raises(LoadError, match=r"rollout-1\.jsonl:2: record type is not text \(list\)"):
        load(f, strict=True)
