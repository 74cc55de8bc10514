"""Turns, worked out by hand."""

from __future__ import annotations

from convlab.loaders.blocks import BlockRow
from convlab.pipeline.turns import message_turns, turn_report, turns
from tests.helpers import corpus


def test_turn_rules() -> None:
    c = corpus(
        {
            "c": [
                ("system", "You are helpful."),  # 0 preamble -> turn 0
                ("user", "First question"),  # 1 turn 0
                ("assistant", "First answer"),  # 2 turn 0
                ("tool", [BlockRow("tool_result", "ok")]),  # 3 turn 0 (carrier)
                ("user", "Interrupted prompt"),  # 4 no reply -> joins turn 1
                ("system", "[Request interrupted by user]"),  # 5 turn 1
                ("user", "Second question"),  # 6 turn 1
                ("assistant", "Second answer"),  # 7 turn 1
                ("user", "Last question, no answer yet"),  # 8 turn 2, incomplete
            ]
        }
    )
    mt = message_turns(c)
    assert mt["turn_index"].to_list() == [0, 0, 0, 0, 1, 1, 1, 1, 2]
    t = turns(c)
    assert t["turn_id"].to_list() == ["c:t0", "c:t1", "c:t2"]
    assert t["first_message_index"].to_list() == [0, 4, 8]
    assert t["last_message_index"].to_list() == [3, 7, 8]
    assert t["is_complete"].to_list() == [True, True, False]
    assert turn_report(c)["incomplete_turns"] == 1


def test_conversation_without_real_user_has_no_turns() -> None:
    c = corpus(
        {"a": [("system", "x"), ("assistant", "y")], "b": [("user", "q"), ("assistant", "r")]}
    )
    assert turns(c)["conversation_id"].to_list() == ["b"]
    assert turn_report(c) == {
        "turns": 1,
        "incomplete_turns": 0,
        "messages_in_no_turn": 2,
        "conversations_without_turns": 1,
    }


def test_a_sub_agent_conversation_has_turns_of_its_own() -> None:
    # every message of a sub-agent's conversation is a sidechain one; its prompt (given by the
    # parent agent) starts its turn, as a person's prompt does in a session
    from convlab.loaders.base import CorpusBuilder

    b = CorpusBuilder()
    b.conversation("s:agent-a1", source_format="t", source_path="t", parent_conversation_id="s")
    for line, (role, text, real) in enumerate(
        [("user", "find the versions", True), ("assistant", "1.5.0", False)], start=1
    ):
        b.message(
            "s:agent-a1",
            role,
            [BlockRow("text", text)],
            source_path="t",
            source_line=line,
            is_real_user=real,
            is_sidechain=True,
        )
    t = turns(b.build())
    assert t["turn_id"].to_list() == ["s:agent-a1:t0"]
    assert t["is_complete"].to_list() == [True]


def test_dialog_turns() -> None:
    c = corpus(
        {
            "d": [
                ("user", "Hi", True, "Ann"),
                ("assistant", "Hey", False, "Bo"),
                ("assistant", "How are you?", False, "Bo"),
                ("user", "Fine", True, "Ann"),
                ("assistant", "Good", False, "Bo"),
            ]
        },
        kind="dialog",
    )
    assert message_turns(c)["turn_index"].to_list() == [0, 0, 0, 1, 1]
