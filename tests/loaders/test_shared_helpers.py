"""The pieces every reader shares: content blocks, JSON heads and arguments, empty messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from convlab.loaders.base import CorpusBuilder
from convlab.loaders.blocks import REDACTED_THINKING, BlockRow, content_blocks, other_block
from convlab.loaders.jsontext import NestingError, json_head, parse_json_or


def typed(t: object, b: dict[str, object]) -> BlockRow | None:
    """A block callback: ``skip`` blocks make none, others a block of their type."""
    return None if t == "skip" else BlockRow("other", str(t))


def test_content_string_is_one_text_block_or_none_when_blank() -> None:
    assert content_blocks("hi", typed) == [BlockRow("text", "hi")]
    assert content_blocks("  \n", typed) == []


def test_content_neither_string_nor_list_is_none() -> None:
    assert content_blocks(5, typed) is None
    assert content_blocks({"type": "text"}, typed) is None


def test_content_list_strings_objects_and_the_rest() -> None:
    content = ["a", {"type": "x"}, 7, {"type": "skip"}, {"no": "type"}, " "]
    assert content_blocks(content, typed) == [
        BlockRow("text", "a"),
        BlockRow("other", "x"),
        BlockRow("other", "None"),
        BlockRow("text", " "),  # a string item is kept even when blank, as readers always did
    ]


def test_other_block_keeps_text_only_when_a_string() -> None:
    assert other_block({"type": "new", "text": "t"}) == BlockRow("other", "t")
    assert other_block({"type": "new", "text": 3}) == BlockRow("other", "")
    assert other_block({"type": "new"}) == BlockRow("other", "")
    assert BlockRow("thinking", "[redacted thinking]") == REDACTED_THINKING


def test_json_head_only_for_json_files_and_without_spaces() -> None:
    assert json_head(Path("a.JSONL"), b'{"role": "user"}') == b'{"role":"user"}'
    assert json_head(Path("a.json"), b"[ 1 ]") == b"[1]"
    assert json_head(Path("a.txt"), b'{"role": "user"}') is None


def test_parse_json_or_default_only_when_not_json() -> None:
    assert parse_json_or('{"cmd": "ls"}', "d") == {"cmd": "ls"}
    assert parse_json_or("null", "d") is None
    assert parse_json_or("ls -l", {"input": "ls -l"}) == {"input": "ls -l"}
    with pytest.raises(NestingError, match="nested deeper"):
        parse_json_or("[" * 5000 + "]" * 5000, "d")


def test_message_or_record_counts_an_empty_message_as_a_record() -> None:
    builder = CorpusBuilder()
    builder.conversation("c", source_format="x", source_path="f")
    assert builder.message_or_record("c", "user", [], source_path="f", source_line=1) is None
    index = builder.message_or_record(
        "c", "assistant", [BlockRow("text", "ok")], source_path="f", source_line=2
    )
    builder.file_done("f", "x", 2)
    corpus = builder.build()
    assert index == 0
    assert corpus.messages.select("role", "source_line").rows() == [("assistant", 2)]
    assert corpus.report.files.select("records", "skipped").rows() == [(2, 0)]
