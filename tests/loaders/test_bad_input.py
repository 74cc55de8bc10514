"""Bad input: a clear LoadError naming file and line in strict mode; counted skips otherwise."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convlab.loaders import LoadError, load
from convlab.loaders.base import CorpusBuilder

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
    c = load(f, strict=True)
    assert c.blocks["text"].to_list() == ["Fix the build", "Still here.", "Done."]
    assert str(c.messages["timestamp"][1]) == "2026-01-01 10:00:05+00:00"
    assert c.conversations["title"].to_list() == [None]


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


SAMPLES = [
    "claude_code/spotter_real/short.jsonl",
    "claude_code/kvsankar_synthetic/compaction_claude_session_with_compaction.jsonl",
    "codex/kvsankar_synthetic/compaction_codex_session_with_compaction.jsonl",
    "codex/kvsankar_real_redacted/session-01.jsonl",
    "chatgpt/mitkury_synthetic_branching/example-conversation.json",
    "sharegpt/llamafactory/mllm_demo.json",
]

JUNK = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.sampled_from(["\ud800", "a\udfffb"]),  # half a surrogate pair (escaped by json.dumps)
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _mutate(value: object, rnd: random.Random, junk: object) -> object:
    """Replace one randomly chosen nested value by junk."""
    if isinstance(value, dict) and value:
        key = rnd.choice(list(value))
        if rnd.random() < 0.4:
            return {**value, key: junk}
        return {**value, key: _mutate(value[key], rnd, junk)}
    if isinstance(value, list) and value:
        i = rnd.randrange(len(value))
        out = list(value)
        out[i] = junk if rnd.random() < 0.4 else _mutate(value[i], rnd, junk)
        return out
    return junk


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sample=st.sampled_from(SAMPLES),
    seed=st.integers(0, 2**32 - 1),
    junk=JUNK,
    how=st.sampled_from(["json", "bytes", "truncate", "lines"]),
)
def test_corrupted_real_samples_load_or_raise_load_error(
    transcripts: Path,
    tmp_path_factory: pytest.TempPathFactory,
    sample: str,
    seed: int,
    junk: object,
    how: str,
) -> None:
    rnd = random.Random(seed)
    src = transcripts / sample
    dst = tmp_path_factory.mktemp("fuzz") / src.name
    raw = src.read_bytes()
    if how == "bytes":
        data = bytearray(raw)
        for _ in range(5):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        dst.write_bytes(bytes(data))
    elif how == "truncate":
        dst.write_bytes(raw[: rnd.randrange(1, len(raw))])
    elif how == "lines":
        lines = raw.splitlines()
        i = rnd.randrange(len(lines))
        lines = lines[:i] + lines[i + 1 :] if rnd.random() < 0.5 else [*lines, lines[i]]
        dst.write_bytes(b"\n".join(lines))
    elif src.suffix == ".jsonl":
        lines = raw.decode().splitlines()
        i = rnd.randrange(len(lines))
        lines[i] = json.dumps(_mutate(json.loads(lines[i]), rnd, junk))
        dst.write_text("\n".join(lines))
    else:
        dst.write_text(json.dumps(_mutate(json.loads(raw), rnd, junk)))
    for strict in (False, True):
        with contextlib.suppress(LoadError):
            load(dst, strict=strict)
    shutil.rmtree(dst.parent, ignore_errors=True)


def test_tool_input_json_text_is_compact_and_takes_what_orjson_refuses() -> None:
    from convlab.loaders.base import json_text

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
    assert c.messages["source_path"][0] == str(tmp_path / "s\ufffd1.jsonl")
    assert "lone surrogates replaced by U+FFFD in messages.source_path" in (
        c.report.skipped["reason"].to_list()
    )
