"""The resurrection cell chosen by cross-validation: ``python -m eval.policy_cv``.

``python -m eval.policy_cv RUN_DIR [RUN_DIR...] --out DIR`` reads each folder's
``policy_budgets.parquet`` (from ``eval.run --resurrection ...`` or ``eval.resurrection_grid``)
and runs :func:`convlab.studies.policy_cv.policy_cv`: the (system, policy) cell chosen per
fold by grouped cross-validation at 256, 512 and 1,024 tokens, its held-out coverage and answer
containment, and CV@512 against ``message`` + ``unit`` at 1,024 tokens (paired randomization
test). Writes ``policy_cv.json`` and ``policy_cv.md`` into ``DIR``, and per run folder
``DIR/<its name>/per_query.parquet`` (:func:`convlab.studies.policy_cv.cv_per_query`, for
``eval.levers``) and ``groups.parquet`` (each query's group and fold at ``--budget``, named in
its ``config.json``); the run folders are only read.
A folder without a grid is listed as such. Exit 0, 1 when no folder had a grid, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from convlab.evaluation import folds
from convlab.studies.policy_cv import BUDGETS, cv_cells, cv_per_query, policy_cv

PROG = "python -m eval.policy_cv"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__)
    p.add_argument("runs", nargs="+", help="run folders holding policy_budgets.parquet")
    p.add_argument("--out", required=True, help="folder for policy_cv.json and policy_cv.md")
    p.add_argument(
        "--budgets", default=",".join(map(str, BUDGETS)), help="budgets reported (tokens)"
    )
    p.add_argument("--budget", type=int, default=512, help="the CV cell compared (tokens)")
    p.add_argument("--reference-budget", type=int, default=1024, help="the reference cell's budget")
    p.add_argument("--folds", type=int, default=10, help="most folds (fewer with fewer groups)")
    p.add_argument("--seed", type=int, default=0, help="seed of the tests")
    return p.parse_args(argv)


def _source(folder: Path) -> Path:
    """The run folder behind ``folder``: itself, or the run a ``grid.json`` was made from."""
    if (folder / "config.json").exists() or not (folder / "grid.json").exists():
        return folder
    run = json.loads((folder / "grid.json").read_text()).get("run")
    return Path(run) if isinstance(run, str) else folder


def _baseline(run: Path) -> str | None:
    """The run's baseline (``config.json``), or None."""
    if not (run / "config.json").exists():
        return None
    baseline = json.loads((run / "config.json").read_text()).get("baseline")
    return baseline if isinstance(baseline, str) else None


def _qrels(run: Path) -> pl.DataFrame | None:
    """The qrels that place queries in conversations (:func:`convlab.evaluation.folds.groups`).

    None where each query has its own haystack (LongMemEval: each question its own group) or
    the run keeps no qrels.
    """
    qrels, haystacks = folds.run_labels(run)
    return None if haystacks else qrels


def _f(x: float | None, sign: bool = False) -> str:
    return "" if x is None else (f"{x:+.3f}" if sign else f"{x:.3f}")


def _markdown(results: dict[str, Any]) -> str:
    lines = [
        "# Resurrection policy chosen by cross-validation",
        "",
        f"`{results['command']}`",
        "",
        "Per budget, the (system, policy) cell with the best mean coverage on each fold's "
        "training groups (conversations; a LongMemEval question is its own group), and the "
        "held-out means of those choices. `delta`: CV-chosen minus the reference, paired over "
        "queries (95% bootstrap interval, randomization p). `in-sample best` reads the test "
        "queries and is shown only for contrast.",
    ]
    for name, r in results["runs"].items():
        lines += ["", f"## {name}", ""]
        if "error" in r:
            lines.append(f"Not measured: {r['error']}")
            continue
        lines += [
            "| budget | folds | groups | queries | coverage | answer contained | "
            "cells chosen (folds) |",
            "|---|---|---|---|---|---|---|",
        ]
        for b, m in r["budgets"].items():
            chosen = ", ".join(f"`{c}` ({n})" for c, n in m["chosen"].items())
            lines.append(
                f"| {b} | {m['folds']} | {m['groups']} | {m['queries']} | {_f(m['coverage'])} | "
                f"{_f(m['answer_contained'])} | {chosen} |"
            )
        ref = r["reference"]
        note = "" if ref["message_in_grid"] else " (no `message` system in the grid: baseline)"
        lines += [
            "",
            f"Reference `{ref['system']}` + `{ref['policy']}` @{ref['budget']}{note}: coverage "
            f"{_f(ref['coverage'])}, answer contained {_f(ref['answer_contained'])}.",
        ]
        if "in_sample" in r:
            s = r["in_sample"]
            lines.append(
                f"In-sample best @{r['comparison']['budget']}: `{s['system']}` + "
                f"`{s['policy']}`, coverage {_f(s['coverage'])}."
            )
        lines += ["", "| measure | queries | CV | reference | delta | delta 95% CI | p | Holm p |"]
        lines += ["|---|---|---|---|---|---|---|---|"]
        for measure in ("coverage", "answer_contained"):
            c = r["comparison"].get(measure)
            if not c or not c["queries"]:
                continue
            lo, hi = c["delta_ci"]
            lines.append(
                f"| {measure} | {c['queries']} | {_f(c['cv'])} | {_f(c['reference'])} | "
                f"{_f(c['delta'], True)} | [{_f(lo, True)}, {_f(hi, True)}] | {c['p']:.4f} | "
                f"{c.get('p_holm', float('nan')):.4f} |"
            )
        lines += _policy_lines(r)
    return "\n".join(lines) + "\n"


def _policy_lines(r: dict[str, Any]) -> list[str]:
    """Each policy family chosen by CV alone: coverage and containment per budget, and its test."""
    families = r.get("policies") or {}
    if not families:
        return []
    budgets = list(next(iter(families.values()))["budgets"])
    at = r["comparison"]["budget"]
    head = " | ".join(f"coverage@{b} | contained@{b}" for b in budgets)
    lines = [
        "",
        "Each policy family chosen by CV alone (its system and its parameters, e.g. window's n, "
        f"on the training folds); delta at {at} against the reference, Holm over every test of "
        "this grid.",
        "",
        f"| policy | {head} | chosen @{at} (folds) | delta coverage | Holm p | "
        "delta contained | Holm p |",
        "|---|" + "---|---|" * len(budgets) + "---|---|---|---|---|",
    ]
    for family, row in families.items():
        cells = " | ".join(
            f"{_f(row['budgets'].get(b, {}).get('coverage'))} | "
            f"{_f(row['budgets'].get(b, {}).get('answer_contained'))}"
            for b in budgets
        )
        chosen = row["budgets"].get(str(at), {}).get("chosen", {})
        tests = []
        for m in ("coverage", "answer_contained"):
            c = row["comparison"].get(m) or {}
            p = c.get("p_holm")
            tests.append(f"{_f(c.get('delta'), True)} | {'' if p is None else f'{p:.4f}'}")
        lines.append(
            f"| {family} | {cells} | "
            + ", ".join(f"`{c}` ({n})" for c, n in chosen.items())
            + f" | {' | '.join(tests)} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; the exit code."""
    args = parse_args(argv)
    try:
        budgets = tuple(int(b) for b in args.budgets.split(",") if b)
    except ValueError:
        print(
            f"{PROG}: --budgets {args.budgets!r}: give integers, comma-separated", file=sys.stderr
        )
        return 2
    results: dict[str, Any] = {"command": " ".join([PROG, *sys.argv[1:]]), "runs": {}}
    per_query: dict[str, pl.DataFrame] = {}
    groups: dict[str, tuple[pl.DataFrame, bool]] = {}
    for folder in map(Path, args.runs):
        grid = folder / "policy_budgets.parquet"
        if not folder.is_dir():
            print(f"{PROG}: {folder}: no such folder", file=sys.stderr)
            return 2
        if not grid.exists():
            results["runs"][str(folder)] = {
                "error": f"{grid} does not exist (make one with python -m eval.resurrection_grid "
                f"{folder} --data DATA --out DIR, then pass DIR)"
            }
            continue
        try:
            source = _source(folder)
            held, _ = cv_cells(
                pl.read_parquet(grid), args.budget, folds=args.folds, qrels=_qrels(source)
            )
            groups[folder.name] = (
                held.select("query_id", "group", "fold"),
                folds.run_labels(source)[1],
            )
            per_query[folder.name] = cv_per_query(
                pl.read_parquet(grid),
                baseline=_baseline(source),
                qrels=_qrels(source),
                budget=args.budget,
                reference_budget=args.reference_budget,
                folds=args.folds,
            )
            results["runs"][str(folder)] = policy_cv(
                pl.read_parquet(grid),
                baseline=_baseline(source),
                qrels=_qrels(source),
                budgets=budgets,
                budget=args.budget,
                reference_budget=args.reference_budget,
                folds=args.folds,
                seed=args.seed,
            )
        except (ValueError, pl.exceptions.PolarsError) as exc:  # LoadError is a ValueError
            print(f"{PROG}: {grid}: {exc}", file=sys.stderr)
            return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "policy_cv.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "policy_cv.md").write_text(_markdown(results))
    for name, frame in per_query.items():  # the lever table's input, one folder per run
        (out / name).mkdir(exist_ok=True)
        frame.write_parquet(out / name / "per_query.parquet")
        record: dict[str, Any] = {"command": results["command"], "run": name}
        frame, haystacks = groups[name]
        record["groups"] = folds.save(out / name, frame, haystacks=haystacks)
        (out / name / "config.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {out / 'policy_cv.md'}")
    return 0 if any("error" not in r for r in results["runs"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
