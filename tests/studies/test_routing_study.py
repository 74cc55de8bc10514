"""The routing study: the in-sample ceiling, and the run folder of a tiny LoCoMo run by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from convlab.evaluation.queries import write_run
from convlab.evaluation.runfolder import run_path
from convlab.studies.routing import Routing
from convlab.studies.routing_study import RoutingStudy, in_sample_ceiling, run
from convlab.systems.system import Tuning

# two settings, four queries; types x, x, y, y: setting 0 is right for x, setting 1 for y
VALUES = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
TYPES = ["x", "x", "y", "y"]


def test_the_in_sample_ceiling_routes_each_type_to_its_best_setting() -> None:
    # all-type: both settings 0.5; per type: x -> setting 0 (1.0), y -> setting 1 (1.0)
    expected = {"all-type": 0.5, "per-type": 1.0, "x": 1.0, "y": 1.0}
    assert in_sample_ceiling(VALUES, TYPES) == expected


def _locomo(sample_id: str) -> dict[str, object]:
    said = [("Ann", "I adopted a cat named Tom."), ("Bo", "Mostly mugs so far.")]
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 1 May, 2023",
            "session_1": [
                {"speaker": who, "dia_id": f"D1:{i}", "text": t}
                for i, (who, t) in enumerate(said, 1)
            ],
        },
        "qa": [
            {
                "question": "What is the cat called?",
                "answer": "Tom",
                "evidence": ["D1:1"],
                "category": 1,
            },
            {
                "question": "What does Bo make?",
                "answer": "mugs",
                "evidence": ["D1:2"],
                "category": 2,
            },
        ],
    }


def _ranked(hits: dict[str, list[str]]) -> pl.DataFrame:
    rows = [(q, d, r, float(9 - r)) for q, ds in hits.items() for r, d in enumerate(ds, 1)]
    return pl.DataFrame(rows, schema=["query_id", "doc_id", "rank", "score"], orient="row")


def test_the_run_folder_records_its_groups_and_the_references_means(tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([_locomo("conv-26"), _locomo("conv-30")]))
    folder = tmp_path / "run"
    (folder / "runs").mkdir(parents=True)
    # queries cN:q0 (multi-hop, relevant m0) and cN:q1 (temporal, relevant m1)
    qs = [f"conv-{c}:q{i}" for c in (26, 30) for i in (0, 1)]
    first = {q: [f"{q[:7]}:m0", f"{q[:7]}:m1"] for q in qs}  # m0 first: q0 found, q1 too (@5)
    runs = {
        "a": _ranked(first),
        "b": _ranked({q: list(reversed(d)) for q, d in first.items()}),
        "fusion:convex": _ranked({q: [f"{q[:7]}:m0"] for q in qs}),  # finds q0 only
        "bm25:message": _ranked({q: [f"{q[:7]}:m9"] for q in qs}),  # finds nothing
    }
    for name, frame in runs.items():
        write_run(frame, run_path(folder, name), name)
    (folder / "config.json").write_text(json.dumps({"systems": [{"name": n} for n in runs]}))
    (folder / "qrels.txt").write_text("".join(f"{q} 0 {q[:7]}:m{q[-1]} 1\n" for q in qs))
    config = RoutingStudy(
        folder=folder,
        data=data,
        routing=Routing(views=("a", "b"), tuning=Tuning(weights=(0.5, 2.0), folds=2), min_train=1),
    )
    out = tmp_path / "out"
    result = run(config, out, command=["python", "-m", "eval.routing"])
    record = json.loads((out / "config.json").read_text())
    assert record["study"] == "routing"
    # 4 queries in 2 conversations: 2 groups, 2 folds, a conversation's queries in one fold
    assert record["groups"] == {"rule": "conversation", "groups": 2, "folds": 2, "queries": 4}
    groups = pl.read_parquet(out / "groups.parquet")
    assert groups["group"].to_list() == ["conv-26", "conv-26", "conv-30", "conv-30"]
    fold = groups["fold"].to_list()
    assert fold[0] == fold[1] != fold[2] == fold[3]
    means = {
        (r["system"], r["category"]): r["mean"]
        for r in result.metrics["means"]
        if r["metric"] == "recall@5"
    }
    # fusion:convex finds each q0 (multi-hop) and no q1 (temporal): (1 + 0 + 1 + 0) / 4
    assert means[("fusion:convex", "all")] == 0.5
    assert means[("fusion:convex", "multi-hop")] == 1.0
    assert means[("fusion:convex", "temporal")] == 0.0
    assert means[("bm25:message", "all")] == 0.0
    # both views rank both messages in the top 5: every weighting finds all: routed = 1
    assert means[("routing:gold", "all")] == 1.0
    assert result.metrics["mode"] == "cv"
    assert (out / "routing.md").is_file()
    assert result.report.read_text().startswith("# Routing (cv)")


def test_transfer_needs_its_data() -> None:
    with pytest.raises(ValueError, match="both the source run folder and its data"):
        RoutingStudy(folder=Path("r"), data=Path("d"), transfer_from=Path("s"))
