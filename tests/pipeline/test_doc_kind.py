"""The doc kind (turn or message) is decided once per conversation and read from the data.

A mixed corpus: ``d`` is a two-speaker dialog (its docs are messages), ``c`` a chat (its docs are
turns). Every stage must judge each conversation by its own kind: before issue 12, ``evaluate``
decided once for the whole corpus (``all`` conversations dialogs?), so in a mixed corpus the
dialog's relevant messages had no chunks and its coverage was 0.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from convlab import schema
from convlab.embed import HashEmbedder
from convlab.evaluation.config import EvalConfig
from convlab.evaluation.datasets import LabelledData
from convlab.evaluation.evaluate import evaluate
from convlab.loaders import Corpus, CorpusBuilder
from convlab.loaders.blocks import BlockRow
from convlab.systems.system import System

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DIALOG = [  # (role, speaker, text): one session, so one timestamp
    ("user", "Ann", "I adopted a grey cat last week."),
    ("assistant", "Bo", "What is the cat called?"),
    ("user", "Ann", "She is called Miso."),
]
CHAT = [
    ("user", None, "How do I list files in Python?"),
    ("assistant", None, "Use os.listdir or pathlib.Path.iterdir."),
    ("user", None, "And only the directories?"),
    ("assistant", None, "Filter with Path.is_dir."),
]


def mixed_corpus() -> Corpus:
    b = CorpusBuilder(strict=True)
    b.conversation("d", source_format="test", source_path="d.json", kind="dialog")
    for role, speaker, text in DIALOG:
        b.message(
            "d",
            role,
            [BlockRow("text", text)],
            source_path="d.json",
            source_line=1,
            timestamp=T0,
            is_real_user=role == "user",
            speaker=speaker,
        )
    b.conversation("c", source_format="test", source_path="c.jsonl", kind="chat")
    for i, (role, _, text) in enumerate(CHAT):
        b.message(
            "c",
            role,
            [BlockRow("text", text)],
            source_path="c.jsonl",
            source_line=i + 1,
            timestamp=T0 + timedelta(minutes=i),
            is_real_user=role == "user",
        )
    return b.build()


def test_the_doc_kind_is_decided_per_conversation_at_load() -> None:
    kinds = dict(mixed_corpus().conversations.select("conversation_id", "doc_kind").iter_rows())
    assert kinds == {"d": "message", "c": "turn"}


def test_a_reader_may_choose_the_doc_kind_and_a_bad_one_is_refused() -> None:
    b = CorpusBuilder()
    b.conversation("x", source_format="test", source_path="x", doc_kind="message")
    assert b.build().conversations["doc_kind"].to_list() == ["message"]
    with pytest.raises(ValueError, match="unknown doc kind 'page'; valid: turn, message"):
        b.conversation("y", source_format="test", source_path="y", doc_kind="page")
    with pytest.raises(ValueError, match="unknown doc kind 'page'; valid: turn, message"):
        mixed_corpus().with_doc_kind("page")


def test_chunks_and_units_carry_each_conversation_s_own_docs() -> None:
    from convlab.pipeline.chunks import chunks
    from convlab.pipeline.units import units

    c = chunks(mixed_corpus())
    assert dict(c.group_by("conversation_id").agg(pl.col("doc_kind").first()).iter_rows()) == {
        "d": "message",
        "c": "turn",
    }
    u = units(c, "isolated")
    docs = {
        cid: sorted({d for ds in part["doc_ids"].to_list() for d in ds})
        for (cid,), part in u.group_by("conversation_id")
    }
    # the dialog's 3 utterances are 3 docs (messages); the chat's 4 messages are 2 turns
    assert docs == {"d": ["d:m0", "d:m1", "d:m2"], "c": ["c:t0", "c:t1"]}
    # turn_pair pairs utterances in the dialog (Bo's question answers Ann's first line) and
    # the user S0 with the assistant S0 in the chat
    tp = dict(units(c, "turn_pair").select("target_chunk_id", "text").iter_rows())
    assert (
        tp["d:t0:assistant:s0"]
        == "Ann: I adopted a grey cat last week. Bo: What is the cat called?"
    )
    assert tp["c:t1:assistant:s0"] == "And only the directories? Filter with Path.is_dir."


def test_a_conversation_whose_chunks_disagree_on_the_doc_kind_is_refused() -> None:
    from convlab.pipeline.chunks import chunks
    from convlab.pipeline.units import units

    c = chunks(mixed_corpus())
    bad = c.with_columns(
        pl.when(pl.col("chunk_id") == "d:t0:user:s0")
        .then(pl.lit("turn"))
        .otherwise(pl.col("doc_kind"))
        .alias("doc_kind")
    )
    with pytest.raises(ValueError, match=r"disagree on their doc kind: \['d'\]"):
        units(bad, "isolated")


def test_evaluate_judges_a_mixed_corpus_per_conversation() -> None:
    """Fails before issue 12: the dialog query's coverage was 0.0 (its docs taken for turns)."""
    queries = schema.frame(
        [
            {
                "query_id": "qd",
                "text": "what is the cat called",
                "conversation_id": "d",
                "relevant": ["d:m2"],
            },
            {
                "query_id": "qc",
                "text": "list directories in python",
                "conversation_id": "c",
                "relevant": ["c:t1"],
            },
        ],
        schema.QUERIES,
    )
    data = LabelledData("mixed", mixed_corpus(), queries)
    ev = evaluate(
        data,
        [System(name="whole_turn", strategy="whole_turn")],
        embedder=HashEmbedder(64),
        config=EvalConfig(budgets=(2048,)),
        progress=False,
    )
    # a whole_turn unit holds every chunk of its turn (of each message of it in the dialog), and
    # 2,048 tokens hold every unit of either conversation: every relevant doc comes back whole
    coverage = dict(ev.budgets.select("query_id", "coverage").iter_rows())
    assert coverage == {"qd": 1.0, "qc": 1.0}
