"""Every reader fuzzed: the only outcomes are a corpus (lenient) or one LoadError (strict).

A small valid file per format (written here, so the test runs without the shared samples) is
damaged by hypothesis: cut short, bytes overwritten, lines dropped or repeated, or one value
anywhere replaced by junk -- wrong types, integers over 64 bits, NaN and the infinities, ``1e999``,
lone surrogates, nesting past every parser's limit (as a value and as JSON text inside a string,
the way tool arguments arrive). Lenient mode must return a corpus (whatever it could not read
listed in ``report.skipped``, never an exception); strict mode a corpus or a :class:`LoadError`.
The real samples of ``shared/transcripts`` are fuzzed the same way.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convlab.loaders import FORMATS, Corpus, LoadError, load

DEEP = 5000  # past orjson's 1024 levels and the recursion limit (hypothesis raises it to ~3000)


def _lines(*records: object) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


SEEDS: dict[str, tuple[str, str]] = {  # format -> (relative path, content)
    "claude_code": (
        "s1.jsonl",
        _lines(
            {
                "type": "user",
                "sessionId": "s1",
                "uuid": "u1",
                "timestamp": "2026-01-01T10:00:00Z",
                "message": {"role": "user", "content": "Fix the build"},
            },
            {
                "type": "assistant",
                "sessionId": "s1",
                "uuid": "a1",
                "message": {
                    "id": "m1",
                    "content": [
                        {"type": "thinking", "thinking": "look"},
                        {"type": "tool_use", "name": "Bash", "input": {"command": "make"}},
                    ],
                },
            },
            {
                "type": "user",
                "sessionId": "s1",
                "uuid": "u2",
                "message": {
                    "content": [{"type": "tool_result", "content": "ok", "is_error": False}]
                },
            },
            {"type": "summary", "summary": "Build fix", "leafUuid": "a1"},
        ),
    ),
    "codex": (
        "rollout-1.jsonl",
        _lines(
            {"type": "session_meta", "timestamp": "2026-01-01T10:00:00Z", "payload": {"id": "c1"}},
            {
                "type": "response_item",
                "payload": {"type": "message", "role": "user", "content": [{"text": "list"}]},
            },
            {
                "type": "response_item",
                "payload": {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": json.dumps({"command": ["ls", "-la"]}),
                },
            },
            {
                "type": "response_item",
                "payload": {"type": "function_call_output", "output": {"output": "a b"}},
            },
            {"type": "event_msg", "payload": {"type": "user_message", "message": "thanks"}},
        ),
    ),
    "amplifier": (
        "sessions/amp1/transcript.jsonl",
        _lines(
            {"role": "user", "content": "Which index?", "timestamp": "2026-01-01T10:00:00Z"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Let me check."}],
                "tool_calls": [
                    {"id": "t1", "tool": "bash", "arguments": {"cmd": "ls"}},
                    {
                        "id": "t2",
                        "type": "function",
                        "function": {"name": "grep", "arguments": '{"q": "x"}'},
                    },
                ],
            },
            {"role": "tool", "name": "bash", "content": "a b"},
        ),
    ),
    "chatgpt": (
        "conversations.json",
        json.dumps(
            [
                {
                    "title": "t",
                    "create_time": 1767261600,
                    "current_node": "n3",
                    "mapping": {
                        "n1": {"message": None, "parent": None},
                        "n2": {
                            "parent": "n1",
                            "message": {
                                "id": "m2",
                                "author": {"role": "user"},
                                "content": {"content_type": "text", "parts": ["hi"]},
                            },
                        },
                        "n3": {
                            "parent": "n2",
                            "message": {
                                "id": "m3",
                                "author": {"role": "assistant"},
                                "recipient": "python",
                                "content": {"content_type": "code", "text": "print(1)"},
                            },
                        },
                    },
                }
            ]
        ),
    ),
    "sharegpt": (
        "share.json",
        json.dumps(
            [
                {
                    "id": "g1",
                    "system": "be brief",
                    "conversations": [
                        {"from": "human", "value": "weather?"},
                        {"from": "function_call", "value": '{"name": "w", "arguments": {}}'},
                        {"from": "observation", "value": "sunny"},
                        {"from": "gpt", "value": "Sunny."},
                    ],
                }
            ]
        ),
    ),
    "openai": (
        "train.jsonl",
        _lines(
            {
                "messages": [
                    {"role": "system", "content": "s"},
                    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [{"function": {"name": "f", "arguments": '{"a": [1, 2.5]}'}}],
                    },
                    {"role": "tool", "content": "42"},
                ]
            },
            {"messages": [{"role": "user", "content": "again"}]},
        ),
    ),
    "anthropic": (
        "claude.json",
        json.dumps(
            {
                "system": "careful",
                "messages": [
                    {"role": "user", "content": "ls"},
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": "t1", "name": "bash", "input": {"c": "ls"}}
                        ],
                    },
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}],
                    },
                ],
            }
        ),
    ),
    "locomo": (
        "locomo.json",
        json.dumps(
            [
                {
                    "sample_id": "conv-1",
                    "conversation": {
                        "speaker_a": "Ann",
                        "speaker_b": "Bo",
                        "session_1_date_time": "1:56 pm on 8 May, 2023",
                        "session_1": [
                            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
                            {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice!"},
                        ],
                        "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "How is it?"}],
                    },
                    "qa": [{"question": "Pet?", "answer": "a cat", "evidence": ["D1:1"]}],
                }
            ]
        ),
    ),
    "longmemeval": (
        "longmemeval_s.json",
        json.dumps(
            [
                {
                    "question_id": "q1",
                    "question_type": "single-session-user",
                    "question": "What did I adopt?",
                    "answer": "a cat",
                    "question_date": "2023/05/30 (Tue) 10:00",
                    "haystack_session_ids": ["s1", "s2"],
                    "haystack_dates": ["2023/05/08 (Mon) 13:56", "2023/05/09 (Tue) 09:00"],
                    "haystack_sessions": [
                        [
                            {"role": "user", "content": "I adopted a cat.", "has_answer": True},
                            {"role": "assistant", "content": "Nice!"},
                        ],
                        [
                            {"role": "user", "content": "How do I bake bread?"},
                            {"role": "assistant", "content": "Flour, water, salt, yeast."},
                        ],
                    ],
                    "answer_session_ids": ["s1"],
                }
            ]
        ),
    ),
}

RAW = "\x00raw:"  # a junk string standing for raw JSON text spliced in after dumping
NESTING: list[object] = [
    RAW + "[" * DEEP + "]" * DEEP,  # nesting past every parser's limit
    RAW + '{"a":' * DEEP + "1" + "}" * DEEP,
    "[" * DEEP + "]" * DEEP,  # deep JSON text in a string: tool arguments
    RAW + "[" * 990 + "]" * 990,  # near the default recursion limit of 1000
    RAW + "[" * 300 + "]" * 300,  # orjson writes 254 levels at most
    "[" * 300 + "]" * 300,
]
SPECIAL: list[object] = [
    2**64,  # integers over 64 bits
    -(2**70),
    2**200,
    float("nan"),  # written as NaN, Infinity, -Infinity
    float("inf"),
    float("-inf"),
    f"{RAW}1e999",  # a float out of range
    f"{RAW}-1e999",
    "\ud800",  # lone surrogates (escaped by json.dumps)
    "a\udfffb",
    "\x00\u2028",
    None,
    True,
    "",
    [],
    {},
]
# hypothesis favours the first branches and elements: the hazards come first
JUNK = st.one_of(
    st.sampled_from(NESTING),
    st.sampled_from(SPECIAL),
    st.integers(),
    st.text(max_size=5),
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


_MARK = json.dumps(RAW)[:-1]  # how a string holding raw junk starts in JSON text
_STRING = json.JSONDecoder()


def _dumps(value: object) -> str:
    """JSON text of ``value``, raw junk spliced in where it stands (NaN stays NaN)."""
    text = json.dumps(value)
    while _MARK in text:
        start = text.index(_MARK)
        raw, end = _STRING.raw_decode(text, start)
        text = text[:start] + raw[len(RAW) :] + text[end:]
    return text


def damage(raw: bytes, jsonl: bool, rnd: random.Random, junk: object, how: str) -> bytes:
    """``raw`` damaged one way (see the module docstring)."""
    if how == "bytes":
        data = bytearray(raw)
        for _ in range(5):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        return bytes(data)
    if how == "truncate":
        return raw[: rnd.randrange(1, len(raw))]
    if how == "lines":
        lines = raw.splitlines()
        i = rnd.randrange(len(lines))
        lines = lines[:i] + lines[i + 1 :] if rnd.random() < 0.5 else [*lines, lines[i]]
        return b"\n".join(lines)
    if jsonl:
        lines = raw.decode().splitlines()
        i = rnd.randrange(len(lines))
        lines[i] = _dumps(_mutate(json.loads(lines[i]), rnd, junk))
        return "\n".join(lines).encode()
    return _dumps(_mutate(json.loads(raw), rnd, junk)).encode()


def check_outcomes(path: Path) -> Corpus:
    """Lenient: a corpus, nothing raised. Strict: a corpus or one LoadError naming the file."""
    corpus = load(path)
    assert isinstance(corpus, Corpus)
    error: LoadError | None = None
    try:
        load(path, strict=True)
    except LoadError as exc:
        error = exc
    if error is not None:  # the file, or the metadata.json beside it
        assert Path(error.path).parent == path.parent
    return corpus


def test_every_format_has_a_seed() -> None:
    assert set(SEEDS) == set(FORMATS)


@pytest.mark.parametrize("fmt", sorted(SEEDS))
def test_seeds_are_valid_and_read_as_their_format(tmp_path: Path, fmt: str) -> None:
    rel, text = SEEDS[fmt]
    f = tmp_path / rel
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)
    if fmt == "amplifier":
        (f.parent / "metadata.json").write_text('{"session_id": "amp1", "name": "t"}')
    c = load(tmp_path, strict=True)
    assert c.messages.height >= 2
    assert set(c.report.files["source_format"]) == {fmt}


@settings(
    max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    fmt=st.sampled_from(sorted(SEEDS)),
    seed=st.integers(0, 2**32 - 1),
    junk=JUNK,
    how=st.sampled_from(["json", "json", "json", "bytes", "truncate", "lines"]),
    metadata=st.booleans(),
)
def test_damaged_files_of_every_format_load_or_raise_load_error(
    tmp_path_factory: pytest.TempPathFactory,
    fmt: str,
    seed: int,
    junk: object,
    how: str,
    metadata: bool,
) -> None:
    rnd = random.Random(seed)
    rel, text = SEEDS[fmt]
    root = tmp_path_factory.mktemp("fuzz")
    dst = root / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    meta = b'{"session_id": "amp1", "name": "t", "parent_id": "p0", "agent_name": "a"}'
    if fmt == "amplifier" and metadata:  # damage the side file instead of the transcript
        dst.write_text(text)
        (dst.parent / "metadata.json").write_bytes(damage(meta, False, rnd, junk, how))
    else:
        if fmt == "amplifier":
            (dst.parent / "metadata.json").write_bytes(meta)
        dst.write_bytes(damage(text.encode(), dst.suffix == ".jsonl", rnd, junk, how))
    check_outcomes(dst)
    shutil.rmtree(root, ignore_errors=True)


SAMPLES = [
    "claude_code/spotter_real/short.jsonl",
    "claude_code/kvsankar_synthetic/compaction_claude_session_with_compaction.jsonl",
    "codex/kvsankar_synthetic/compaction_codex_session_with_compaction.jsonl",
    "codex/kvsankar_real_redacted/session-01.jsonl",
    "chatgpt/mitkury_synthetic_branching/example-conversation.json",
    "sharegpt/llamafactory/mllm_demo.json",
    "sharegpt/llamafactory/glaive_toolcall_en_demo.first25.json",
    "sharegpt/llamafactory/reason_tool_use_demo.first15.jsonl",
]


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sample=st.sampled_from(SAMPLES),
    seed=st.integers(0, 2**32 - 1),
    junk=JUNK,
    how=st.sampled_from(["json", "json", "json", "bytes", "truncate", "lines"]),
)
def test_damaged_real_samples_load_or_raise_load_error(
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
    dst.write_bytes(damage(src.read_bytes(), src.suffix == ".jsonl", rnd, junk, how))
    check_outcomes(dst)
    shutil.rmtree(dst.parent, ignore_errors=True)


def test_damage_splices_raw_junk() -> None:
    # the helper itself: raw text replaces its marker, other strings stay strings
    assert _dumps({"a": f"{RAW}1e999", "b": "x", "c": [f"{RAW}NaN"]}) == (
        '{"a": 1e999, "b": "x", "c": [NaN]}'
    )
