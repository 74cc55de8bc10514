"""The system x policy grid of a saved run folder (the library of ``eval.resurrection_grid``).

``python -m eval.resurrection_grid RUN_FOLDER [--data DATA] --out DIR`` runs :func:`run` (a
:class:`GridStudy`).

The grid's figures, tests, plot and table are those of ``python -m eval.run --resurrection
unit,doc,...`` (:mod:`convlab.evaluation.policy_grid`,
:func:`convlab.evaluation.runfolder.save_grid`,
:func:`convlab.evaluation.report.policy_grid_lines`); this command only finds the per-query grid
(``policy_budgets``) of a run folder made without it, in one of three ways:

- the folder already holds ``policy_budgets.parquet`` (made by ``eval.run --resurrection``): it
  is read, no data or model needed;
- ``exact`` (``--exact CACHE``): the chosen systems are evaluated again with the run's settings
  and the policies (:func:`convlab.evaluation.evaluate.evaluate`, MiniLM through the embedding
  cache, BM25 without a model), the very code path of ``eval.run``; the re-run's ranked docs are
  compared with the saved TREC runs (``mapping`` in ``grid.json``);
- otherwise, with no model at all, from the TREC runs under ``runs/`` (ranked docs) and the
  data's chunks and units rebuilt with the run's content policy (the tokenizer only). TREC runs
  hold doc ids, not unit ids: each ranked doc is mapped back to the system's unit for it (among
  the units whose ``doc_ids`` hold the doc, those whose other docs all rank at or above it -- a
  doc scores its best unit, so its best unit's other docs score at least as high -- the first in
  conversation order). The doc-based policies (``doc``, ``window``, ``pair``) read only the
  hit's doc and are exact; ``unit`` and ``unit+doc`` are exact where one unit remains, and
  ``mapping`` in ``grid.json`` counts the hits where several did. Where the run folder holds
  ``budgets.parquet`` (its ``unit`` figures, from the real hits), the rebuilt ``unit`` figures
  are compared with it per query and budget.

This last mode is why the command stays: it scores run folders made before the grid existed
(e.g. a full LoCoMo run) without a model. Writes ``grid.json``, ``grid.md``,
``policy_budgets.parquet``, ``policy_significance.parquet`` and ``policy_grid.png`` into ``DIR``,
with the study's ``config.json`` (the run folder's data:
:func:`~convlab.studies.contract.source_record`), ``metrics.json`` and ``report.md``
(:mod:`convlab.studies.contract`).
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import polars as pl

from convlab.atomic import write_text_atomic
from convlab.defaults import BUDGETS, GRID_SYSTEMS
from convlab.evaluation.policy_grid import grid_means, grid_significance, reference_cell
from convlab.evaluation.queries import read_run
from convlab.evaluation.runfolder import run_path
from convlab.files import CONFIG, read_text_regular
from convlab.model import MAX_TOKENS
from convlab.pipeline.policy import ContentPolicy
from convlab.resurrection import POLICIES, budget_measures, get_policy
from convlab.studies.contract import STUDIES, Study, StudyResult, source_record, write_study
from convlab.systems.system import System

if TYPE_CHECKING:
    from convlab.evaluation.datasets import LabelledData

__all__ = [
    "GridStudy",
    "compare_with_saved",
    "grid_from_runs",
    "map_hits",
    "rerun_grid",
    "run",
    "same_ranking",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class GridStudy:
    """The grid of one run folder (:func:`run`); empty choices mean the defaults.

    Attributes:
        run: a run folder of ``eval.run`` (``config.json``, ``runs/*.trec``).
        data: the labelled data the run was made on (not needed when the folder holds
            ``policy_budgets.parquet``).
        systems: systems of the grid (default: those of a saved grid, else
            ``default_systems``).
        policies: policies of the grid (default: those of a saved grid, else all).
        budgets: budgets (default: those of a saved grid, else ``default_budgets``).
        baseline: system of the reference cell (default: the run's baseline when in the grid,
            else the first system).
        plot_systems: systems drawn in ``policy_grid.png`` (default: the baseline, ``message``
            and the best 3 by coverage at 512).
        exact: an embedding cache folder: re-run the systems to get their unit ids.
        default_systems: the systems when none are named and the folder saved no grid.
        default_budgets: the budgets when none are named and the folder saved no grid.
    """

    study: ClassVar[str] = "resurrection-grid"
    run: Path
    data: str | None = None
    systems: tuple[str, ...] = ()
    policies: tuple[str, ...] = ()
    budgets: tuple[int, ...] = ()
    baseline: str | None = None
    plot_systems: tuple[str, ...] = ()
    exact: str | None = None
    default_systems: tuple[str, ...] = GRID_SYSTEMS
    default_budgets: tuple[int, ...] = BUDGETS

    def __post_init__(self) -> None:
        for p in self.policies:
            get_policy(p)  # an unknown name or a bad parameter fails here


def rerun_grid(
    data: LabelledData,
    cfg: dict[str, Any],
    systems: list[str],
    policies: list[str],
    budgets: list[int],
    cache: str,
) -> tuple[pl.DataFrame, dict[str, pl.DataFrame], dict[str, pl.DataFrame]]:
    """The run's ``systems`` evaluated again with its settings and ``policies`` (as eval.run).

    Returns:
        The per-query grid (``Evaluation.policy_budgets``), each system's hits and each
        strategy's units.
    """
    from convlab.embed import CachedEmbedder, minilm_embedder
    from convlab.evaluation.evaluate import EvalConfig, evaluate

    c = cfg["config"]
    config = EvalConfig(
        budgets=tuple(budgets),
        depth=c["depth"],
        scope=c["scope"],
        policy=ContentPolicy(**c["policy"]),
        max_tokens=c.get("max_tokens", c.get("budget", MAX_TOKENS)),
        resurrection=tuple(policies),
    )
    chosen = [System.from_dict(s) for s in cfg["systems"] if s["name"] in systems]
    embedder = CachedEmbedder(minilm_embedder(), cache)
    ev = evaluate(data, chosen, embedder=embedder, config=config, progress=False)
    grid = ev.policy_budgets
    if not grid.height:  # one policy: evaluate keeps it in budgets only
        grid = ev.budgets.with_columns(pl.lit(policies[0]).alias("policy"))
    return grid, ev.hits, ev.units


def grid_from_runs(
    run_dir: Path,
    data: LabelledData,
    cfg: dict[str, Any],
    systems: list[str],
    policies: list[str],
    budgets: list[int],
    exact: str | None,
    log: Callable[[str], None] = lambda line: None,
) -> tuple[pl.DataFrame, dict[str, Any], dict[str, Any]]:
    """The per-query grid of a run folder's TREC runs (module doc), with its checks.

    Returns:
        The grid, ``mapping`` (per system: how hits were found) and ``unit_policy_vs_saved_run``.
    """
    from convlab.pipeline.chunks import chunks as make_chunks
    from convlab.pipeline.units import units as make_units

    # a fused system's docs are mapped to its first view's units here (the exact units come
    # with --exact, or with eval.run --resurrection)
    strategy_of = {s["name"]: System.from_dict(s).strategy for s in cfg["systems"]}
    chunks = make_chunks(data.corpus, ContentPolicy(**cfg["config"]["policy"]))
    rerun = rerun_grid(data, cfg, systems, policies, budgets, exact) if exact else None
    saved = run_dir / "budgets.parquet"
    saved_unit = pl.read_parquet(saved, glob=False) if saved.is_file() else None
    parts, mapping, check = [], {}, {}
    units_of: dict[str, pl.DataFrame] = {}
    started = time.perf_counter()
    for system in systems:
        strategy = strategy_of[system]
        if strategy not in units_of:
            units_of[strategy] = make_units(chunks, strategy, MAX_TOKENS)
        units = units_of[strategy]
        run = read_run(run_path(run_dir, system))
        if rerun is not None:
            grid, hits_of, units_by_strategy = rerun
            if not units_by_strategy[strategy].equals(units):
                raise ValueError(f"{system}: the re-run's units differ from the rebuilt ones")
            mapping[system] = {"rerun": 1, **same_ranking(hits_of[system], run)}
            mine = grid.filter(pl.col("system") == system)
        else:
            hits, mapping[system] = map_hits(run, units)
            mine = pl.concat(
                budget_measures(
                    hits, data.queries, units=units, chunks=chunks, budgets=budgets, policy=p
                ).with_columns(pl.lit(system).alias("system"), pl.lit(p).alias("policy"))
                for p in policies
            )
        parts.append(mine)
        if "unit" in policies and saved_unit is not None:
            check[system] = compare_with_saved(
                mine.filter(pl.col("policy") == "unit"),
                saved_unit.filter(pl.col("system") == system),
            )
        log(f"{system}: {mapping[system]} ({time.perf_counter() - started:.0f} s)")
    return pl.concat(parts, how="diagonal_relaxed"), mapping, check


def _saved(
    study: GridStudy, saved_grid: Path
) -> tuple[pl.DataFrame, list[str], list[str], list[int]]:
    """The grid a run folder saved, cut to the study's systems, policies and budgets."""
    grid = pl.read_parquet(saved_grid, glob=False)
    systems = list(study.systems) or grid["system"].unique(maintain_order=True).to_list()
    policies = list(study.policies) or grid["policy"].unique(maintain_order=True).to_list()
    budgets = list(study.budgets) or grid["budget"].unique().sort().to_list()
    _check_known(systems, grid["system"].unique().to_list(), saved_grid)
    _check_known(policies, grid["policy"].unique().to_list(), saved_grid)
    grid = grid.filter(
        pl.col("system").is_in(systems)
        & pl.col("policy").is_in(policies)
        & pl.col("budget").is_in(budgets)
    )
    return grid, systems, policies, budgets


def run(
    study: GridStudy,
    out: Path,
    *,
    command: Sequence[str] = (),
    log: Callable[[str], None] = lambda line: None,
) -> StudyResult:
    """Find the run's grid, test it, and write it as a standard run folder (module doc).

    Returns:
        The folder, ``metrics`` (what ``grid.json`` holds but the command, the run, the data and
        the seconds, which ``config.json`` holds) and ``report.md`` (``grid.md``).

    Raises:
        ValueError: no ``data`` where it is needed, a system or policy the run does not have,
            a baseline not in the grid.
    """
    from convlab.evaluation.report import policy_grid_lines
    from convlab.evaluation.runfolder import save_grid

    started = time.perf_counter()
    run_dir = study.run
    cfg = json.loads(read_text_regular(run_dir / "config.json", limit=CONFIG))
    saved_grid = run_dir / "policy_budgets.parquet"
    mapping: dict[str, Any] = {}
    check: dict[str, Any] = {}
    if saved_grid.is_file() and not study.exact:
        grid, systems, policies, budgets = _saved(study, saved_grid)
        queries = grid["query_id"].n_unique()
        source = str(saved_grid)
    else:
        if not study.data:
            raise ValueError(f"--data is needed: {saved_grid} does not exist (or --exact given)")
        from convlab.evaluation.datasets import load_labelled

        systems = list(study.systems or study.default_systems)
        policies = list(study.policies) or list(POLICIES.names())
        budgets = list(study.budgets or study.default_budgets)
        if not systems or not budgets:
            raise ValueError(f"name the systems and budgets: {saved_grid} does not exist")
        _check_known(systems, [s["name"] for s in cfg["systems"]], run_dir / "config.json")
        data = load_labelled(study.data)
        grid, mapping, check = grid_from_runs(
            run_dir, data, cfg, systems, policies, budgets, study.exact, log
        )
        queries = data.queries.height
        source = "rerun" if study.exact else "trec runs"
    baseline = study.baseline or (cfg.get("baseline") if cfg.get("baseline") in systems else None)
    baseline = baseline or systems[0]
    reference_cell(grid, baseline)  # a baseline not in the grid fails here, naming its systems
    significance = grid_significance(grid, baseline=baseline, seed=cfg["config"].get("seed", 0))
    out.mkdir(parents=True, exist_ok=True)
    save_grid(out, grid, significance, baseline=baseline, systems=list(study.plot_systems) or None)
    grid_md = "\n".join(policy_grid_lines(grid, significance, image="policy_grid.png"))
    result = {
        "command": shlex.join(command),
        "run": str(run_dir),
        "data": study.data,
        "source": source,
        "queries": queries,
        "budgets": budgets,
        "policies": policies,
        "baseline": baseline,
        "mapping": mapping,
        "unit_policy_vs_saved_run": check,
        "efficiency": significance.filter(pl.col("test") == "efficiency").to_dicts(),
        "grid": grid_means(grid).to_dicts(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_text_atomic(out / "grid.json", json.dumps(result, indent=1))
    write_text_atomic(out / "grid.md", grid_md)
    recorded = ("command", "run", "data", "seconds")  # config.json's
    return write_study(
        out,
        study,
        metrics={k: v for k, v in result.items() if k not in recorded},
        report=grid_md + "\n",
        command=command,
        data=source_record(run_dir),
        extra={"grid": "grid.json", "seconds": result["seconds"]},
    )


def _check_known(names: list[str], known: list[str], where: Path) -> None:
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"not in {where}: {unknown}; there: {sorted(known)}")


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


STUDIES.add(
    "resurrection-grid",
    Study("resurrection-grid", GridStudy, run, "eval.resurrection_grid"),
)
