"""Re-make every figure at HEAD: ``python -m eval.reproduce --tier ci|quick|full [--only NAME]``.

Runs the regressions of ``eval/regressions/*.toml`` (:mod:`convlab.evaluation.regressions`) of
the tier: ``ci`` (the bundled sample and two LoCoMo conversations, what ``make test`` checks),
``quick`` (``ci`` and the runs behind the README's findings table: about 25 minutes on two
cores) or ``full`` (every result page). For each regression it checks the data against its
sha256, runs its steps into ``runs/reproduce/NAME`` (``--runs``), and checks every figure against
its expected value and tolerance. Then, from those run folders, it writes the result pages
(``python -m eval.pages``, into ``--pages``), the README's findings table (``--readme``, only when
every headline regression of the tier ran: not with ``--only``) and ``runs/reproduce/TIER.json``
(``TIER-NAME.json`` with ``--only``): the commit, each regression's seconds and every figure
checked.

A regression whose data is missing or changed, or whose run fails, is one line on stderr; a figure
out of tolerance is one line; either makes the exit status 1 (2 for a usage error). The pages and
the table are written only from a clean checkout (``git status`` shows no change to a tracked
file), so each names the one commit that made all of it; ``--check`` runs and checks without
writing them. ``--seconds`` records each regression's measured time in its file; ``--record``
rewrites each file's recorded figures from its run (a deliberate change: say why in the commit).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import msgspec

from convlab.evaluation import findings
from convlab.evaluation.provenance import source_commit
from convlab.evaluation.regressions import (
    TIERS,
    Checked,
    Figure,
    Regression,
    RegressionError,
    check,
    data_sha256,
    in_tier,
    load_regressions,
    recorded_figures,
    with_figures,
)

PROG = "python -m eval.reproduce"
ROOT = Path(__file__).resolve().parents[1]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n", 1)[0])
    p.add_argument("--tier", choices=TIERS, default="quick")
    p.add_argument("--only", action="append", default=[], metavar="NAME", help="one regression")
    p.add_argument("--regressions", type=Path, default=ROOT / "eval" / "regressions")
    p.add_argument(
        "--datasets", type=Path, default=None, help="default: CONVLAB_DATA or ../shared/datasets"
    )
    p.add_argument("--runs", type=Path, default=Path("runs/reproduce"))
    p.add_argument("--cache", type=Path, default=Path("runs/cache"))
    p.add_argument("--pages", type=Path, default=ROOT / "docs" / "site_src" / "results")
    p.add_argument("--readme", type=Path, default=ROOT / "README.md")
    p.add_argument("--permutations", type=int, default=20_000)
    p.add_argument("--check", action="store_true", help="run and check; write no page or table")
    p.add_argument("--reuse", action="store_true", help="check existing run folders; run nothing")
    p.add_argument("--seconds", action="store_true", help="record measured seconds in each file")
    p.add_argument(
        "--record",
        action="store_true",
        help="rewrite each file's recorded figures from its run (a deliberate change of figures)",
    )
    p.add_argument("--tolerance", type=float, default=0.002, help="of recorded figures")
    return p


def _datasets(given: Path | None) -> Path:
    if given is not None:
        return given
    env = os.environ.get("CONVLAB_DATA")
    path = Path(env) if env else ROOT.parent / "shared" / "datasets"
    # relative to the checkout where it can be, so the commands the pages show name no home folder
    return Path(os.path.relpath(path, ROOT)) if path.is_absolute() else path


def _fill(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), text)


def _run(reg: Regression, values: dict[str, str], log: Path) -> None:
    """Every step of ``reg``, its output in ``log``; a failing step raises RegressionError."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as out:
        for step in reg.steps:
            argv = [sys.executable, "-m", *(_fill(a, values) for a in step)]
            out.write(f"$ {shlex.join(argv[1:])}\n")
            out.flush()
            code = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT).returncode
            if code != 0:
                raise RegressionError(
                    f"{reg.source}: step `{shlex.join(step)}` exited {code} (log: {log})"
                )


def _record_seconds(reg: Regression, seconds: float) -> None:
    """Rewrite the ``seconds = ...`` line of the regression's file (the one line it owns)."""
    path = Path(reg.source)
    text = path.read_text(encoding="utf-8")
    line = f"seconds = {seconds:.0f}"
    new, n = re.subn(r"(?m)^seconds = .*$", line, text)
    path.write_text(
        new if n else text.replace("\nsteps = ", f"\n{line}\nsteps = ", 1), encoding="utf-8"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    command = shlex.join([*PROG.split(), *(sys.argv[1:] if argv is None else argv)])
    try:
        regs = [r for r in load_regressions(args.regressions) if in_tier(r, args.tier)]
    except RegressionError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    if args.only:
        unknown = sorted(set(args.only) - {r.name for r in regs})
        if unknown:
            print(f"{PROG}: not in tier {args.tier}: {', '.join(unknown)}", file=sys.stderr)
            return 2
        regs = [r for r in regs if r.name in args.only]
    commit, state = source_commit(ROOT)
    write = not args.check
    if write and state != "clean":
        print(f"{PROG}: the checkout is {state}: commit first, or use --check", file=sys.stderr)
        return 2
    datasets = _datasets(args.datasets)
    failed: list[str] = []
    checked: list[Checked] = []
    seconds: dict[str, float] = {}
    done: dict[str, Path] = {}
    recorded: dict[str, list[Figure]] = {}
    for reg in regs:
        run = args.runs / reg.name
        values = {
            "datasets": str(datasets),
            "runs": str(args.runs),
            "cache": str(args.cache),
            "run": str(run),
            # a program that writes its own page writes it here, or into the run folder
            "pages": str(args.pages if write else run / "pages"),
        }
        values["data"] = _fill(reg.data, values)
        try:
            got = data_sha256(Path(values["data"]))
            if got != reg.data_sha256:
                raise RegressionError(
                    f"{reg.source}: {values['data']} has sha256 {got}, not the registered one"
                )
            if not args.reuse:
                started = time.perf_counter()
                _run(reg, values, args.runs / f"{reg.name}.log")
                seconds[reg.name] = round(time.perf_counter() - started, 1)
            if args.record:
                figures = recorded_figures(run, tolerance=args.tolerance)
                reg = msgspec.structs.replace(reg, figures=figures)
                recorded[reg.source] = figures
            results = check(run, reg)
        except RegressionError as e:
            print(f"{PROG}: {e}", file=sys.stderr)
            failed.append(reg.name)
            continue
        done[reg.name] = run
        checked += results
        for c in results:
            mark = "ok" if c.ok else "OUT OF TOLERANCE"
            value = "missing" if c.value is None else f"{c.value:.4f}"
            want = f"expected {c.expected:.4f} +- {c.tolerance}"
            line = f"{reg.name}: {c.system} {c.metric} {value} ({want}) {mark}"
            print(line, file=sys.stdout if c.ok else sys.stderr)
        print(f"{reg.name}: {len(results)} figures, {seconds.get(reg.name, 0.0)} s", flush=True)
    # the files change only now: every run above was made from the clean checkout
    for source, figures in recorded.items():
        path = Path(source)
        path.write_text(with_figures(path.read_text(encoding="utf-8"), figures), encoding="utf-8")
    for reg in regs:
        if args.seconds and reg.name in seconds:
            _record_seconds(reg, seconds[reg.name])
    bad = [c for c in checked if not c.ok]
    summary = {
        "tier": args.tier,
        "command": command,
        "commit": commit,
        "commit_state": state,
        "seconds": seconds,
        "total_seconds": round(sum(seconds.values()), 1),
        "failed": failed,
        "figures": [msgspec.structs.asdict(c) for c in checked],
    }
    args.runs.mkdir(parents=True, exist_ok=True)
    stem = "-".join([args.tier, *args.only])
    (args.runs / f"{stem}.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    if write and not failed:
        _write(args, [r for r in regs if r.name in done], done, command)
    print(
        f"{len(checked) - len(bad)}/{len(checked)} figures within tolerance; "
        f"{len(failed)} regressions failed; {summary['total_seconds']} s",
        flush=True,
    )
    return 1 if bad or failed else 0


def _write(
    args: argparse.Namespace,
    regs: list[Regression],
    done: dict[str, Path],
    command: str,
) -> None:
    """The result pages and the README's findings table, from the run folders."""
    from eval import pages

    paged = [done[r.name] for r in regs if r.page]
    out = os.path.relpath(args.pages)  # the page names the command: no home folder in it
    if paged and pages.main([str(p) for p in paged] + ["--out", out]) != 0:
        raise SystemExit(1)
    heads = sorted(
        (r for r in regs if r.headline is not None),
        key=lambda r: (r.headline.order if r.headline else 0, r.name),
    )
    if not heads or args.tier == "ci" or args.only:  # the table needs every row of its tier
        return
    every = load_regressions(args.regressions)  # again: --seconds may have just measured some
    block = findings.table(
        [(r, done[r.name]) for r in heads],
        every,
        args.tier,
        command=command,
        permutations=args.permutations,
    )
    readme = args.readme.read_text(encoding="utf-8")
    args.readme.write_text(findings.with_table(readme, block), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
