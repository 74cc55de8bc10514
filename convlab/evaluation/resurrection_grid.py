"""Resurrection policies compared at equal budgets, from a saved run folder, no model needed.

``python -m eval.resurrection_grid RUN_FOLDER --data LOCOMO --out DIR``

Reads a run folder of ``python -m eval.run`` (``config.json`` and the TREC runs under ``runs/``:
ranked docs per query), rebuilds the data's chunks and units (the tokenizer only, with the run's
content policy), and scores every (system, policy, budget) with
:func:`convlab.resurrection.budget_measures`: mean coverage, evidence token recall, answer
containment, tokens used and redundancy. Writes ``grid.json``, ``grid.md`` and
``containment_vs_tokens.png`` (answer containment against tokens used, one line per
(system, policy)) into ``DIR``.

TREC runs hold doc ids, not unit ids. With ``--exact CACHE`` the systems are searched again
(MiniLM through the embedding cache, BM25 without a model) and their hits carry unit ids; the
re-run's ranked docs are compared with the saved run's (``mapping`` in ``grid.json``). Without
it (no model at all), each ranked doc is mapped back to the system's unit for it:
among the units whose ``doc_ids`` hold the doc, those whose other docs all rank at or above it
(a doc scores its best unit, so its best unit's other docs score at least as high), the first in
conversation order. The doc-based policies (``doc``, ``window``, ``pair``) read only the hit's doc
and are exact; ``unit`` and ``unit+doc`` are exact where one unit remains, and ``mapping`` in
``grid.json`` counts the hits where several did. Where the run folder holds ``budgets.parquet``
(its ``unit`` figures, computed from the real hits), the rebuilt ``unit`` figures are compared
with it per query and budget.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from convlab.atomic import write_file_atomic, write_text_atomic
from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.queries import read_run
from convlab.pipeline.chunks import chunks as make_chunks
from convlab.pipeline.policy import ContentPolicy
from convlab.pipeline.units import MAX_TOKENS
from convlab.pipeline.units import units as make_units
from convlab.resurrection import POLICIES, budget_measures

if TYPE_CHECKING:
    from convlab.evaluation.datasets import LabelledData
    from convlab.evaluation.evaluate import Evaluation

DEFAULT_SYSTEMS = "bm25:message,message,sequential,turn_pair"
MEASURES = ("coverage", "evidence_token_recall", "answer_contained", "tokens_used", "redundancy")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line of ``python -m eval.resurrection_grid``."""
    p = argparse.ArgumentParser(prog="python -m eval.resurrection_grid", description=__doc__)
    p.add_argument("run", help="a run folder of python -m eval.run (config.json, runs/*.trec)")
    p.add_argument("--data", required=True, help="the labelled data the run was made on")
    p.add_argument("--out", required=True, help="folder for grid.json, grid.md and the plot")
    p.add_argument("--systems", default=DEFAULT_SYSTEMS, help="%(default)s")
    p.add_argument("--policies", default=",".join(POLICIES.names()), help="%(default)s")
    p.add_argument("--budgets", default="128,256,512,1024,2048")
    p.add_argument(
        "--exact",
        metavar="CACHE",
        default=None,
        help="re-run the systems (MiniLM through this embedding cache folder, BM25 without a "
        "model) to get their unit ids, instead of mapping ranked docs back to units",
    )
    return p.parse_args(argv)


def rerun(
    data: LabelledData, cfg: dict[str, Any], systems: list[str], budgets: list[int], cache: str
) -> Evaluation:
    """The run's ``systems`` searched again with the run's settings, hits with their unit ids."""
    from convlab.embed import CachedEmbedder, minilm_embedder
    from convlab.evaluation.evaluate import EvalConfig, System, evaluate

    c = cfg["config"]
    config = EvalConfig(
        budgets=tuple(budgets),
        depth=c["depth"],
        scope=c["scope"],
        policy=ContentPolicy(**c["policy"]),
        max_tokens=c.get("max_tokens", c.get("budget", MAX_TOKENS)),
    )
    chosen = [
        System(name=s["name"], strategy=s["strategy"], retrieval=s["retrieval"])
        for s in cfg["systems"]
        if s["name"] in systems
    ]
    embedder = CachedEmbedder(minilm_embedder(), cache)
    return evaluate(data, chosen, embedder=embedder, config=config, progress=False)


def same_ranking(hits: pl.DataFrame, run: pl.DataFrame) -> dict[str, int]:
    """Queries whose re-run ranked docs equal the saved run's, of all queries in either."""
    mine = {q: part.sort("rank")["doc_id"].to_list() for (q,), part in hits.group_by("query_id")}
    saved = {q: part.sort("rank")["doc_id"].to_list() for (q,), part in run.group_by("query_id")}
    both = set(mine) | set(saved)
    return {"queries": len(both), "identical": sum(mine.get(q) == saved.get(q) for q in both)}


def map_hits(run: pl.DataFrame, units: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Hits (``query_id, rank, unit_id, doc_id``) of a TREC run's ranked docs (module doc).

    Returns:
        The hits, and counts: ``hits``, ``ambiguous`` (several candidate units remained) and
        ``unmapped`` (no unit holds the doc: an error is raised instead, so always 0).

    Raises:
        ValueError: a ranked doc that no unit stands for.
    """
    of_doc: dict[str, list[tuple[str, list[str]]]] = {}
    for uid, docs in units.select("unit_id", "doc_ids").iter_rows():
        for d in docs or []:
            of_doc.setdefault(d, []).append((uid, docs))
    rows = []
    ambiguous = 0
    for (q,), part in run.group_by("query_id", maintain_order=True):
        ranked = part.sort("rank").select("rank", "doc_id").rows()
        rank_of = {d: r for r, d in ranked}
        for r, d in ranked:
            cands = of_doc.get(d)
            if not cands:
                raise ValueError(f"query {q}: ranked doc {d!r} has no unit in this strategy")
            fit = [u for u, docs in cands if all(rank_of.get(o, 1 << 30) <= r for o in docs)]
            fit = fit or [u for u, _ in cands]
            ambiguous += len(fit) > 1
            rows.append((q, r, fit[0], d))
    hits = pl.DataFrame(
        rows,
        schema={"query_id": pl.String, "rank": pl.Int32, "unit_id": pl.String, "doc_id": pl.String},
        orient="row",
    )
    return hits, {"hits": len(rows), "ambiguous": ambiguous, "unmapped": 0}


def summarise(per_query: pl.DataFrame) -> pl.DataFrame:
    """Means per (system, policy, budget), each over the queries where the measure is defined."""
    return (
        per_query.group_by("system", "policy", "budget")
        .agg(
            *(pl.col(m).mean() for m in MEASURES),
            pl.col("coverage").is_not_null().sum().alias("queries"),
        )
        .sort("system", "policy", "budget")
    )


def markdown(summary: pl.DataFrame, headline: dict[str, object]) -> str:
    """The grid as a markdown table, and the headline comparison."""
    lines = [
        "| system | policy | budget | coverage | evidence token recall | answer contained "
        "| tokens used | redundancy |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in summary.iter_rows(named=True):
        lines.append(
            f"| {r['system']} | {r['policy']} | {r['budget']} | {r['coverage']:.3f} "
            f"| {r['evidence_token_recall']:.3f} | {r['answer_contained']:.3f} "
            f"| {r['tokens_used']:.0f} | {r['redundancy']:.3f} |"
        )
    h = headline
    lines += [
        "",
        f"Best (system, policy) at {h['budget']} tokens by coverage: {h['best_system']} + "
        f"{h['best_policy']}, coverage {h['best_coverage']:.3f}; "
        f"{h['reference']} at {h['reference_budget']}: {h['reference_coverage']:.3f}.",
    ]
    return "\n".join(lines) + "\n"


def plot(summary: pl.DataFrame, path: Path) -> None:
    """Answer containment against mean tokens used, one line per (system, policy)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 6))
    systems = summary["system"].unique(maintain_order=True).to_list()
    policies = summary["policy"].unique(maintain_order=True).to_list()
    styles = ["-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1))]
    markers = ["o", "s", "^", "D", "v"]
    # colour per system, line style and marker per policy: 20 lines stay apart
    for (system, policy), part in summary.group_by("system", "policy", maintain_order=True):
        part = part.sort("budget")
        i, j = systems.index(system), policies.index(policy)
        ax.plot(
            part["tokens_used"],
            part["answer_contained"],
            color=f"C{i % 10}",
            linestyle=styles[j % len(styles)],
            marker=markers[j % len(markers)],
            label=f"{system} + {policy}",
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("mean tokens used (budgets 128 .. 2048)")
    ax.set_ylabel("answer contained in the context")
    ax.set_title("Answer containment against tokens used, per (system, policy)")
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    ax.grid(alpha=0.3)
    try:
        write_file_atomic(
            path, lambda tmp: fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
        )
    finally:
        plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the system x policy grid and write ``grid.json``, ``grid.md`` and the plot."""
    args = parse_args(argv)
    started = time.perf_counter()
    run_dir = Path(args.run)
    cfg = json.loads((run_dir / "config.json").read_text())
    strategy_of = {s["name"]: s["strategy"] for s in cfg["systems"]}
    systems = [s for s in args.systems.split(",") if s]
    unknown = [s for s in systems if s not in strategy_of]
    if unknown:
        raise SystemExit(f"systems not in {run_dir / 'config.json'}: {unknown}")
    policies = [p for p in args.policies.split(",") if p]
    for p in policies:
        POLICIES.get(p)  # an unknown name fails here, listing the valid ones
    budgets = [int(b) for b in args.budgets.split(",")]
    data = load_labelled(args.data)
    content = ContentPolicy(**cfg["config"]["policy"])
    chunks = make_chunks(data.corpus, content)
    queries = data.queries
    ev = rerun(data, cfg, systems, budgets, args.exact) if args.exact else None
    saved = run_dir / "budgets.parquet"
    saved_unit = pl.read_parquet(saved) if saved.is_file() else None
    per_query, mapping, check = [], {}, {}
    units_of: dict[str, pl.DataFrame] = {}
    for system in systems:
        strategy = strategy_of[system]
        if strategy not in units_of:
            units_of[strategy] = make_units(chunks, strategy, MAX_TOKENS)
        units = units_of[strategy]
        run = read_run(run_dir / "runs" / f"{system.replace(':', '_')}.trec")
        if ev is None:
            hits, mapping[system] = map_hits(run, units)
        else:
            hits = ev.hits[system].select("query_id", "rank", "unit_id", "doc_id")
            if not ev.units[strategy].equals(units):
                raise SystemExit(f"{system}: the re-run's units differ from the rebuilt ones")
            mapping[system] = {"rerun": 1, **same_ranking(hits, run)}
        for policy in policies:
            m = budget_measures(
                hits, queries, units=units, chunks=chunks, budgets=budgets, policy=policy
            ).with_columns(pl.lit(system).alias("system"), pl.lit(policy).alias("policy"))
            per_query.append(m)
            if policy == "unit" and saved_unit is not None:
                check[system] = compare_with_saved(m, saved_unit.filter(pl.col("system") == system))
        print(f"{system}: {mapping[system]} ({time.perf_counter() - started:.0f} s)", flush=True)
    pq = pl.concat(per_query)
    summary = summarise(pq)
    headline = best_at(summary, budget=512, reference=("message", "unit"), reference_budget=1024)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {
        "command": " ".join(["python -m eval.resurrection_grid", *(argv or sys.argv[1:])]),
        "run": str(run_dir),
        "data": str(args.data),
        "queries": queries.height,
        "budgets": budgets,
        "policies": policies,
        "mapping": mapping,
        "unit_policy_vs_saved_run": check,
        "headline": headline,
        "grid": summary.to_dicts(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_text_atomic(out / "grid.json", json.dumps(result, indent=1))
    write_text_atomic(out / "grid.md", markdown(summary, headline))
    plot(summary, out / "containment_vs_tokens.png")
    print(markdown(summary, headline))
    print(json.dumps({"mapping": mapping, "unit_policy_vs_saved_run": check}, indent=1))
    return 0


def compare_with_saved(mine: pl.DataFrame, saved: pl.DataFrame) -> dict[str, float]:
    """How the rebuilt ``unit`` figures match the saved run's, per query and budget."""
    cols = ["coverage", "evidence_token_recall", "tokens_used", "answer_contained"]
    j = mine.join(saved, on=["query_id", "budget"], suffix="_saved")
    same = pl.all_horizontal(*(pl.col(c).eq_missing(pl.col(f"{c}_saved")) for c in cols))
    out: dict[str, float] = {"rows": j.height, "rows_equal": int(j.select(same.sum()).item())}
    for c in ("coverage", "answer_contained"):
        out[f"mean_{c}"] = float(j.select(pl.col(c).mean()).item() or 0.0)
        out[f"mean_{c}_saved"] = float(j.select(pl.col(f"{c}_saved").mean()).item() or 0.0)
    return out


def best_at(
    summary: pl.DataFrame, *, budget: int, reference: tuple[str, str], reference_budget: int
) -> dict[str, object]:
    """The (system, policy) with the best coverage at ``budget`` against ``reference``."""
    at = summary.filter(pl.col("budget") == budget).sort("coverage", descending=True)
    ref = summary.filter(
        (pl.col("system") == reference[0])
        & (pl.col("policy") == reference[1])
        & (pl.col("budget") == reference_budget)
    )
    best = at.row(0, named=True)
    return {
        "budget": budget,
        "best_system": best["system"],
        "best_policy": best["policy"],
        "best_coverage": best["coverage"],
        "best_answer_contained": best["answer_contained"],
        "reference": " + ".join(reference),
        "reference_budget": reference_budget,
        "reference_coverage": ref["coverage"].item() if ref.height else float("nan"),
    }
