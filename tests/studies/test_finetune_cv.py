"""The fine-tuning CV on a tiny labelled set: the folds, each fold's training pairs, the runs.

The training step is a fake (:data:`convlab.studies.finetune_cv.Trainer`) that records what it
was given and returns the hashing embedder: what is checked is what each fold trains on and
what it is tested on, worked out by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from convlab.embed import HashEmbedder
from convlab.embed.finetune import Triple
from convlab.evaluation.queries import read_run
from convlab.protocols import Embedder
from convlab.studies.finetune_cv import FineTuneCV, run

CONVS = ("c0", "c1", "c2", "c3")


def _sample(k: int) -> dict[str, object]:
    lines = [("Ann", f"my cat is called Tom{k}"), ("Bo", f"I like tea {k}"),
             ("Ann", f"the cat slept on bus {k}")]  # fmt: skip
    return {
        "sample_id": f"c{k}",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": who, "dia_id": f"D1:{i}", "text": text}
                for i, (who, text) in enumerate(lines, start=1)
            ],
        },
        "qa": [{"question": f"what is cat {k} called", "answer": f"Tom{k}", "evidence": ["D1:1"]}],
    }


def _triple(k: int) -> Triple:
    # query c{k}:q0's one triple: its question; the evidence D1:1 (message m0) as its unit's
    # text; the BM25 hard negative, the best-ranked non-evidence message: m2, the only other
    # message holding a query term ("cat"); "I like tea" holds none and is never retrieved
    return Triple(
        f"what is cat {k} called", f"Ann: my cat is called Tom{k}", f"Ann: the cat slept on bus {k}"
    )


def test_each_fold_trains_on_its_training_conversations_only(tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([_sample(k) for k in range(4)]))
    seen: list[tuple[str, list[Triple]]] = []

    def train(model_id: str, triples: list[Triple]) -> Embedder:
        seen.append((model_id, triples))
        return HashEmbedder(32)

    config = FineTuneCV(cache=tmp_path / "cache", folds=2, views=("message",), data=data)
    out = tmp_path / "ft"
    result = run(config, out, command=["python", "-m", "eval.finetune_cv"], train=train)
    records = json.loads((out / "config.json").read_text())["fold_records"]
    # 4 conversations, 1 scored query each, 2 folds: each fold holds out 2 conversations and
    # trains on the other 2, so 2 triples per fold, and every conversation is held out once
    tests = [tuple(r["test_conversations"]) for r in records]
    assert sorted(c for t in tests for c in t) == list(CONVS)
    assert [len(t) for t in tests] == [2, 2]
    assert len(seen) == 2
    for record, (model_id, triples) in zip(records, seen, strict=True):
        train_convs = [c for c in CONVS if c not in record["test_conversations"]]
        assert record["train_conversations"] == train_convs
        assert triples == [_triple(int(c[1:])) for c in train_convs]
        assert record["model_id"] == model_id
        assert record["triples"] == 2
        # no text of a held-out conversation is in the fold's training pairs
        held = {f"Tom{c[1:]}" for c in record["test_conversations"]}
        assert not any(h in t.query + t.positive + t.negative for t in triples for h in held)
    # each fold's run holds its held-out queries only, each of their conversation's docs; the
    # two folds' runs, concatenated, hold every query once: 2 + 2 = 4
    assert result.metrics["fold_test_queries"] == [2, 2]
    for record in records:
        folder = out / "folds" / f"fold{record['fold']}of2"
        run_ = read_run(folder / "ft_message.trec")
        queries = set(run_["query_id"])
        assert queries == {f"{c}:q0" for c in record["test_conversations"]}
        for q, doc in run_.select("query_id", "doc_id").rows():
            assert doc.startswith(q.split(":")[0] + ":")  # searched inside its conversation
        # 3 messages per conversation, each a hit: 3 hits per held-out query
        assert run_.height == 3 * len(queries)
    record = json.loads((out / "config.json").read_text())
    assert record["study"] == "finetune-cv"
    # the folds' groups: 4 scored queries, each its conversation's group, in 2 folds, each
    # query in the fold that held its conversation out
    assert record["groups"] == {"rule": "conversation", "groups": 4, "folds": 2, "queries": 4}
    fold_of = {c: r["fold"] for r in records for c in r["test_conversations"]}
    groups = pl.read_parquet(out / "groups.parquet")
    assert groups.rows() == [(f"{c}:q0", c, fold_of[c]) for c in CONVS]
    assert (out / "report.md").read_text().startswith("# Fine-tuned MiniLM by cross-validation")
