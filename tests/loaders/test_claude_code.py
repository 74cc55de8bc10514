"""Claude Code as it is on disk: sidechains, sub-agents, slash commands, titles, projects.

The fixture (tests/fixtures/claude_code, written for these tests in the shapes of the real
spotter and ccrider samples) is a ``~/.claude/projects`` with two projects:

- ``-home-ann-src-webapp``: a v2.1.x session ``5b1c0de2...`` (no summary record; ``/mcp``
  without arguments; ``/create-beads websearch ...`` expanded into an ``isMeta`` skill body; a
  Task sub-agent; ``/compact and continue ...``; a compaction summary; a last prompt), its
  sub-agent ``5b1c0de2.../subagents/agent-a7c11e5.jsonl`` and its compaction worker
  ``agent-acompact-3f2e1d.jsonl`` beside it.
- ``-home-ann-src-api``: a v2.0.x session ``7e3f9a10...`` (a summary record and two inline
  ``isSidechain`` Warmup lines without an agent id), a Warmup file ``0a1b2c3d....jsonl`` of
  ``isSidechain`` records with agent id ``b2c3d4e5`` sharing the session's ``sessionId`` (it
  sorts before the session file), and a sub-agent file ``agent-ffdd9610.jsonl`` beside it.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from convlab.loaders import load
from convlab.loaders.claude_code import command_prompt
from convlab.loaders.corpus import title_of
from convlab.pipeline.turns import turns

FIXTURE = Path(__file__).parent.parent / "fixtures" / "claude_code"
S1 = "5b1c0de2-7a41-4c3e-9f10-2d6e8a0c1b01"
S2 = "7e3f9a10-1c2d-4e5f-8a9b-0c1d2e3f4a02"


@pytest.fixture(scope="module")
def corpus():  # type: ignore[no-untyped-def]
    return load(FIXTURE)


def _texts(corpus, conversation_id: str) -> list[str]:  # type: ignore[no-untyped-def]
    return corpus.blocks.filter(pl.col("conversation_id") == conversation_id)["text"].to_list()


def test_every_sidechain_is_a_conversation_of_its_own(corpus) -> None:  # type: ignore[no-untyped-def]
    convs = {r["conversation_id"]: r for r in corpus.conversations.iter_rows(named=True)}
    assert set(convs) == {
        S1,
        f"{S1}:agent-a7c11e5",
        f"{S1}:agent-acompact-3f2e1d",
        S2,
        f"{S2}:sidechain",  # the inline Warmup lines (no agent id) of the session file
        f"{S2}:agent-b2c3d4e5",  # the Warmup file sharing the session id
        f"{S2}:agent-ffdd9610",
    }
    links = {c: (r["parent_conversation_id"], r["agent_id"]) for c, r in convs.items()}
    assert links == {
        S1: (None, None),
        f"{S1}:agent-a7c11e5": (S1, "a7c11e5"),
        f"{S1}:agent-acompact-3f2e1d": (S1, "acompact-3f2e1d"),
        S2: (None, None),
        f"{S2}:sidechain": (S2, None),
        f"{S2}:agent-b2c3d4e5": (S2, "b2c3d4e5"),
        f"{S2}:agent-ffdd9610": (S2, "ffdd9610"),
    }
    # the session's file is its own source, not the Warmup file read before it
    assert convs[S2]["source_path"] == str(FIXTURE / "-home-ann-src-api" / f"{S2}.jsonl")
    # no Warmup exchange is folded into the session: its 4 messages are its 2 prompts and replies
    assert not any("Warmup" in t or "ready to help" in t for t in _texts(corpus, S2))
    assert corpus.messages.filter(pl.col("conversation_id") == S2).height == 4
    # every conversation's messages come from one file, and sidechains' are all sidechain
    per = corpus.messages.group_by("conversation_id").agg(
        pl.col("source_path").n_unique().alias("files"), pl.col("is_sidechain").all().alias("side")
    )
    assert per["files"].to_list() == [1] * per.height
    assert dict(per.select("conversation_id", "side").iter_rows()) == {
        cid: cid not in (S1, S2) for cid in convs
    }


def test_sub_agents_have_turns_and_warmups_none(corpus) -> None:  # type: ignore[no-untyped-def]
    t = turns(corpus)
    per = dict(t.group_by("conversation_id").len().iter_rows())
    # S1: /create-beads ... (answered) and /compact ... joined by the next prompt; S2: 2 prompts;
    # each sub-agent: its task; the Warmups and the compaction worker: no real prompt, no turn
    assert per == {S1: 2, S2: 2, f"{S1}:agent-a7c11e5": 1, f"{S2}:agent-ffdd9610": 1}
    sub = t.filter(pl.col("conversation_id") == f"{S1}:agent-a7c11e5")
    assert sub.select("first_message_index", "last_message_index", "is_complete").row(0) == (
        0,
        3,
        True,
    )


def test_slash_commands_with_arguments_are_prompts(corpus) -> None:  # type: ignore[no-untyped-def]
    m = corpus.messages.filter(pl.col("conversation_id") == S1).join(
        corpus.blocks, on=["conversation_id", "message_index"]
    )
    rows = {r["source_line"]: r for r in m.iter_rows(named=True)}
    assert (rows[6]["role"], rows[6]["is_real_user"], rows[6]["text"]) == (
        "user",
        True,
        "/create-beads websearch how to set up credo and dialyzer",
    )
    assert (rows[13]["role"], rows[13]["is_real_user"], rows[13]["text"]) == (
        "user",
        True,
        "/compact and continue with the remaining tasks",
    )
    assert (rows[4]["role"], rows[4]["is_real_user"]) == ("system", False)  # /mcp, no arguments
    assert rows[7]["role"] == "system"  # the skill body the command expanded into (isMeta)


def test_titles_fall_back_to_the_first_prompt(corpus) -> None:  # type: ignore[no-untyped-def]
    titles = dict(corpus.conversations.select("conversation_id", "title").iter_rows())
    assert titles == {
        S1: "/create-beads websearch how to set up credo and dialyzer",
        f"{S1}:agent-a7c11e5": "Search hex.pm for the latest credo and dialyxir versions",
        f"{S1}:agent-acompact-3f2e1d": None,  # its prompt is injected, as a compaction summary
        S2: "Cursor pagination for the orders API",  # the summary record wins
        f"{S2}:sidechain": None,  # a Warmup has no real prompt
        f"{S2}:agent-b2c3d4e5": None,
        f"{S2}:agent-ffdd9610": "List the callers of Orders.list_orders/2 in lib/",
    }


def test_the_project_is_the_sessions_cwd(corpus) -> None:  # type: ignore[no-untyped-def]
    projects = dict(corpus.conversations.select("conversation_id", "project").iter_rows())
    assert {p for c, p in projects.items() if c.startswith(S1)} == {"/home/ann/src/webapp"}
    assert {p for c, p in projects.items() if c.startswith(S2)} == {"/home/ann/src/api"}


def test_command_prompt_and_title_of_by_hand() -> None:
    typed = (
        "<command-message>handgemacht:create-beads</command-message>\n"
        "<command-name>/handgemacht:create-beads</command-name>\n"
        "<command-args>websearch credo\n\nMaybe igniter?</command-args>"
    )
    assert command_prompt(typed) == "/handgemacht:create-beads websearch credo\n\nMaybe igniter?"
    assert (
        command_prompt("<command-name>/clear</command-name><command-args> </command-args>") is None
    )
    assert command_prompt("plain prompt <command-name>/x</command-name>") is None
    assert title_of("a " * 50, 10) == "a a a a a…"  # 9 characters kept, trailing space dropped
    assert title_of("  short\n title ") == "short title"
