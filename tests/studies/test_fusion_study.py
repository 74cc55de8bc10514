"""The fusion study: cross-validated weights on a tiny run folder, and the fixed mode."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from convlab.studies.fusion_study import FixedFusion, FusionStudy, fixed, parse_fixed, run
from convlab.systems.system import Tuning

A_DOCS = {  # bm25:message: conversation c1 misses r1 entirely; c2 has r2 first
    "c1:q": ["a1", "a2", "a3", "a4", "a5", "a6"],
    "c2:q": ["r2", "a2", "a3", "a4", "a5", "a6"],
}
B_DOCS = {  # sequential: c1 has r1 first; c2 misses r2 entirely
    "c1:q": ["r1", "b2", "b3", "b4", "b5", "b6"],
    "c2:q": ["b1", "b2", "b3", "b4", "b5", "b6"],
}


def _folder(root: Path) -> Path:
    (root / "runs").mkdir(parents=True)
    for stem, docs in (("bm25_message", A_DOCS), ("sequential", B_DOCS)):
        lines = [
            f"{q} Q0 {d} {rank} {7 - rank}.0 {stem}"
            for q, ranked in docs.items()
            for rank, d in enumerate(ranked, 1)
        ]
        (root / "runs" / f"{stem}.trec").write_text("\n".join(lines) + "\n")
    (root / "qrels.txt").write_text("c1:q 0 r1 1\nc2:q 0 r2 1\n")
    pl.DataFrame({"query_id": ["c1:q", "c2:q"], "category": ["x", "y"]}).write_parquet(
        root / "per_query.parquet"
    )
    return root


def test_the_weights_are_chosen_on_the_other_conversation_and_scored_held_out(
    tmp_path: Path,
) -> None:
    # RRF, k = 60: score(d) = 1/(60 + rank_A) + w/(60 + rank_B), w in {0.5, 2}.
    # c1 (relevant r1, only B has it, rank 1): r1 = w/61.
    #   w = 0.5: r1 = 0.0082 < a6 = 1/66 = 0.0152, so six docs above it: recall@5 = 0
    #   w = 2:   r1 = 0.0328 > a1 = 1/61 = 0.0164: rank 1, recall@5 = 1
    # c2 (relevant r2, only A has it, rank 1): r2 = 1/61 = 0.0164.
    #   w = 0.5: b1 = 0.5/61 = 0.0082 < r2: rank 1, recall@5 = 1
    #   w = 2:   b6 = 2/66 = 0.0303 > r2, so six docs above it: recall@5 = 0
    # Singles: bm25:message (c1 0, c2 1) = 0.5; sequential (c1 1, c2 0) = 0.5.
    # Two folds, one conversation each: trained on c2 the fold picks w = 0.5 and scores 0 on
    # c1; trained on c1 it picks w = 2 and scores 0 on c2. Held out: (0 + 0) / 2 = 0.
    config = FusionStudy(
        folder=_folder(tmp_path / "run"),
        baseline="bm25:message",
        methods=[("rrf", "rrf", {"k": 60}, {})],
        tuning=Tuning(weights=(0.5, 2.0), samples=4, metric="recall@5", folds=2, seed=0),
        combos=[("bm25:message", "sequential")],
    )
    out = tmp_path / "study"
    result = run(config, out, command=["python", "-m", "eval.fuse_runs", "run"])
    means = {r["system"]: r["mean_recall@5"] for r in result.metrics["systems"]}
    fused = "cv rrf bm25:message+sequential"
    assert means == {"bm25:message": 0.5, "sequential": 0.5, fused: 0.0}
    held = pl.read_parquet(out / "per_query.parquet").filter(
        (pl.col("system") == fused) & (pl.col("metric") == "recall@5")
    )
    assert dict(held.select("query_id", "value").rows()) == {"c1:q": 0.0, "c2:q": 0.0}
    choices = pl.read_parquet(out / "choices.parquet")
    chosen = {r["test_groups"]: json.loads(r["params"]) for r in choices.to_dicts()}
    assert chosen == {"c1": {"w:sequential": 0.5}, "c2": {"w:sequential": 2.0}}
    assert choices["train_mean"].to_list() == [1.0, 1.0]  # each choice perfect where it was made
    # the standard run folder: the typed config, the command, the headline numbers, the page
    record = json.loads((out / "config.json").read_text())
    assert record["study"] == "fusion"
    assert record["config"]["tuning"]["weights"] == [0.5, 2.0]
    assert record["command"] == "python -m eval.fuse_runs run"
    assert {"commit", "commit_state", "versions", "data"} <= set(record)
    assert json.loads((out / "metrics.json").read_text())["queries"] == 2
    assert (out / "report.md").read_text().startswith("# Fusion study of ")
    # the groups: one conversation per query, each its own fold, the folds the choices name
    assert record["groups"] == {"rule": "conversation", "groups": 2, "folds": 2, "queries": 2}
    folds = {g: f for _, g, f in pl.read_parquet(out / "groups.parquet").rows()}
    assert folds == dict(choices.select("test_groups", "fold").rows())


def test_parse_fixed_keeps_the_order_and_the_weights() -> None:
    assert parse_fixed("bm25:message=1, sequential=0.5,turn_pair=0") == {
        "bm25:message": 1.0,
        "sequential": 0.5,
        "turn_pair": 0.0,
    }


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("bm25:message", "is not RUN=WEIGHT"),
        ("=1", "is not RUN=WEIGHT"),
        ("a=x", "could not convert"),
    ],
)
def test_parse_fixed_refuses_what_is_not_run_weight(spec: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_fixed(spec)


def test_a_run_the_folder_does_not_have_is_named(tmp_path: Path) -> None:
    runs = tmp_path / "run" / "runs"
    runs.mkdir(parents=True)
    (runs / "bm25_message.trec").write_text("q1 Q0 d1 1 2.0 bm25_message\n")
    (tmp_path / "run" / "qrels.txt").write_text("q1 0 d1 1\n")
    config = FixedFusion(
        folder=tmp_path / "run",
        weights=parse_fixed("bm25:message=1,sequential=1"),
        baseline="bm25:message",
    )
    with pytest.raises(ValueError, match="no run sequential; the runs: bm25:message"):
        fixed(config, tmp_path / "out")
