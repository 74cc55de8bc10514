r"""Seconds per stage of one strategy comparison (``eval.run``), written as JSON.

Runs :func:`convlab.app.cli.eval.main` (``eval.run``) with the functions the evaluation calls
wrapped in timers (build, search, per-query metrics, resurrection budgets, significance,
aggregate, and the run folder's TREC runs, figures and report), so the stages of the real run
are measured, not of a copy. Run it as a file so that ``PYTHONPATH`` picks the code measured (a
worktree or another)::

    PYTHONPATH=. nice python eval/bench_stages.py --json runs/stages.json -- \
        --data ../shared/datasets/locomo/locomo10.json --cache runs/cache \
        --out runs/stages

The JSON holds wall-clock and CPU seconds (all threads) and calls per stage, the totals, the
load average before and after,
and the ``convlab`` package measured.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STAGES = {
    "build": ("convlab.evaluation.evaluate", "build_indexes"),
    "search": ("convlab.evaluation.evaluate", "search_many"),
    "per_query": ("convlab.evaluation.evaluate", "per_query"),
    "budget_measures": ("convlab.evaluation.evaluate", "budget_measures"),
    "significance": ("convlab.evaluation.evaluate", "compare"),
    "aggregate": ("convlab.evaluation.evaluate", "aggregate"),
    "evaluate": ("convlab.evaluation.evaluate", "evaluate"),
    "save_run": ("convlab.evaluation.runfolder", "save_run"),
    "save_run.trec": ("convlab.evaluation.runfolder", "write_run"),
    "save_run.figures": ("convlab.evaluation.runfolder", "_figures"),
    "save_run.report": ("convlab.evaluation.runfolder", "write_report"),
}
"""Stage name -> (module, function name looked up at call time in that module)."""


def _timed(
    fn: Callable[..., Any],
    seconds: dict[str, float],
    cpu: dict[str, float],
    calls: dict[str, int],
    name: str,
) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t, c = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - t
            cpu[name] = cpu.get(name, 0.0) + time.process_time() - c
            calls[name] = calls.get(name, 0) + 1

    return wrapper


def main(argv: list[str] | None = None) -> int:
    """Time one comparison; its options follow ``--``."""
    import importlib

    p = argparse.ArgumentParser(prog="python -m eval.bench_stages", description=__doc__)
    p.add_argument("--json", required=True, help="where the timings go")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="-- then eval.run's options")
    args = p.parse_args(argv)
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}
    calls: dict[str, int] = {}
    for name, (module, attr) in STAGES.items():
        mod = importlib.import_module(module)
        if hasattr(mod, attr):
            setattr(mod, attr, _timed(getattr(mod, attr), seconds, cpu, calls, name))
    from convlab.app.cli import eval as eval_cli

    # compare.py imports evaluate at call time from its module: the wrapped one is found
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    started, started_cpu = time.perf_counter(), time.process_time()
    code = eval_cli.main(rest)
    total, total_cpu = time.perf_counter() - started, time.process_time() - started_cpu
    record = {
        "convlab": os.path.dirname(sys.modules["convlab"].__file__ or ""),
        "argv": rest,
        "total_seconds": round(total, 2),
        "total_cpu_seconds": round(total_cpu, 2),
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "cpu_seconds": {k: round(v, 2) for k, v in cpu.items()},
        "calls": calls,
        "loadavg_before": load_before,
        "loadavg_after": Path("/proc/loadavg").read_text().split()[:3],
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(record, indent=1))
    print(json.dumps(record, indent=1))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
