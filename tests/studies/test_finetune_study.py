"""The fine-tuned views against the base runs: scores, paired tests and the comparison, by hand."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from convlab.evaluation.queries import write_run
from convlab.evaluation.runfolder import run_path
from convlab.studies.finetune_study import (
    compare_with_base,
    fixed_fusion,
    paired_family,
    scored,
)


def _run(ranked: dict[str, list[str]]) -> pl.DataFrame:
    rows = [(q, d, r, float(10 - r)) for q, ds in ranked.items() for r, d in enumerate(ds, 1)]
    return pl.DataFrame(rows, schema=["query_id", "doc_id", "rank", "score"], orient="row")


QUERIES = pl.DataFrame(
    {
        "query_id": ["q1", "q2"],
        "relevant": [["c1:d1", "c1:d2"], ["c2:d1"]],
        "category": ["x", "y"],
    }
)
# q1 has 2 relevant docs, q2 one; every run ranks 2 docs per query (recall@5 = recall@10)
BASE = {
    "message": _run({"q1": ["c1:d1", "c1:d9"], "q2": ["c2:d9", "c2:d8"]}),  # 1/2, 0
    "bm25:message": _run({"q1": ["c1:d2", "c1:d9"], "q2": ["c2:d8", "c2:d9"]}),  # 1/2, 0
    "fusion:convex": _run({"q1": ["c1:d9", "c1:d8"], "q2": ["c2:d1", "c2:d9"]}),  # 0, 1
}
FT = {"ft:message": _run({"q1": ["c1:d1", "c1:d2"], "q2": ["c2:d1", "c2:d9"]})}  # 1, 1


def _values(system: str, values: list[float], baseline: str, base: list[float]) -> pl.DataFrame:
    n = len(values)
    return pl.DataFrame(
        {
            "system": [system] * n + [baseline] * n,
            "query_id": [f"q{i}" for i in range(n)] * 2,
            "category": ["x", "x", "y", "y"][:n] * 2,
            "metric": ["recall@5"] * (2 * n),
            "value": values + base,
        }
    )


def test_scored_counts_relevant_docs_in_the_top_k() -> None:
    values = scored(
        {"message": BASE["message"], "none": BASE["message"][:0]}, QUERIES, ["recall@5"]
    )
    got = {(s, q): v for s, q, v in values.select("system", "query_id", "value").iter_rows()}
    # message: q1 finds c1:d1 of 2 relevant (1/2), q2 none of its 1; an empty run scores 0
    assert got == {("message", "q1"): 0.5, ("message", "q2"): 0.0,
                   ("none", "q1"): 0.0, ("none", "q2"): 0.0}  # fmt: skip


def test_paired_family_deltas_and_holm() -> None:
    # a beats b by 1 on each of 4 queries; c equals b: a sign-flip test of d = (1, 1, 1, 1)
    # reaches |mean| >= 1 only when all 4 signs agree: 2 of 16, p ~ 0.125
    values = pl.concat(
        [
            _values("a", [1.0] * 4, "b", [0.0] * 4),
            _values("c", [0.0] * 4, "b", [0.0] * 4).filter(pl.col("system") == "c"),
        ]
    )
    family = paired_family(values, [("a", "b"), ("c", "b")], "recall@5")
    overall = {r["system"]: r for r in family.filter(pl.col("category") == "all").to_dicts()}
    a, c = overall["a"], overall["c"]
    assert (a["queries"], a["mean"], a["baseline_mean"], a["delta"]) == (4, 1.0, 0.0, 1.0)
    assert (a["ci_low"], a["ci_high"]) == (1.0, 1.0)  # every difference is 1
    assert a["p_randomization"] == pytest.approx(0.125, abs=0.01)
    assert (c["delta"], c["p_randomization"]) == (0.0, 1.0)  # no difference: p = 1
    # Holm over the 2 pairs: the smaller p times 2, the larger times 1 (never below it)
    assert a["p_holm"] == pytest.approx(2 * a["p_randomization"])
    assert c["p_holm"] == 1.0
    # per category (x: q0 q1, y: q2 q3), a family of its own
    assert sorted(family["category"].unique().to_list()) == ["all", "x", "y"]
    x = family.filter((pl.col("category") == "x") & (pl.col("system") == "a")).row(0, named=True)
    assert (x["queries"], x["delta"]) == (2, 1.0)


def test_fixed_fusion_follows_its_one_weighted_run_and_refuses_a_missing_one() -> None:
    fused = fixed_fusion({**BASE, **FT}, {"ft:message": 1.0})
    assert fused.sort("query_id", "rank")["doc_id"].to_list() == [
        "c1:d1",
        "c1:d2",
        "c2:d1",
        "c2:d9",
    ]
    with pytest.raises(ValueError, match="no run nope"):
        fixed_fusion(BASE, {"nope": 1.0})


def test_compare_with_base_on_a_tiny_run_folder(tmp_path: Path) -> None:
    base = tmp_path / "base"
    (base / "runs").mkdir(parents=True)
    for name, run in BASE.items():
        write_run(run, run_path(base, name), name)
    systems = [{"name": n} for n in BASE]  # the names of its runs, as an eval.run folder's
    (base / "config.json").write_text(json.dumps({"systems": systems}))
    (base / "qrels.txt").write_text("q1 0 c1:d1 1\nq1 0 c1:d2 1\nq2 0 c2:d1 1\n")
    QUERIES.select("query_id", "category").write_parquet(base / "per_query.parquet")
    out = tmp_path / "out"
    names, family, text = compare_with_base(out, base, FT, {"message": 1.0})
    assert set(names) == {*BASE, *FT, "fusion:convex-ft", "fusion:convex-fixed"}
    rows = {
        (r["system"], r["baseline"]): r
        for r in family.filter(
            (pl.col("metric") == "recall@5") & (pl.col("category") == "all")
        ).to_dicts()
    }
    # recall@5 means over q1, q2: ft:message (1 + 1) / 2 = 1; message (1/2 + 0) / 2 = 1/4;
    # fusion:convex (0 + 1) / 2 = 1/2; bm25:message 1/4. The ft fusion weighs ft:message
    # alone (message -> ft:message), so it ranks as ft:message: 1
    expected = {
        ("ft:message", "message"): (1.0, 0.25, 0.75),
        ("fusion:convex-ft", "fusion:convex"): (1.0, 0.5, 0.5),
        ("fusion:convex-ft", "bm25:message"): (1.0, 0.25, 0.75),
    }
    assert {k: (r["mean"], r["baseline_mean"], r["delta"]) for k, r in rows.items()} == expected
    # the fixed fusion of the base's message alone ranks as message: (1/2 + 0) / 2
    values = pl.read_parquet(out / "per_query.parquet")
    fixed = values.filter(
        (pl.col("system") == "fusion:convex-fixed") & (pl.col("metric") == "recall@5")
    )
    assert fixed["value"].mean() == 0.25
    assert (out / "qrels.txt").read_text() == (base / "qrels.txt").read_text()
    assert (out / "comparison.md").read_text() == text
    assert "| recall@5 | all | ft:message | message | 2 | 0.250 | 1.000 | +0.750 |" in text
