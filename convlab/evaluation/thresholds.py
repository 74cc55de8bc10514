"""Minimum scores per system, checked against a run folder's ``metrics.json``.

A thresholds file (TOML) holds sets (``sample``, ``locomo2``, ...); each set maps a system to the
minimum of each metric (means from ``metrics.json``'s summary, ``coverage@512`` among them)::

    [sample.turn_pair]
    "recall@5" = 0.80

They are set from measured runs minus a small margin, so a regression fails CI and noise does not.
``python -m eval.check_thresholds RUN --set NAME`` is the command line.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from convlab.files import CONFIG, read_text_regular

__all__ = ["check", "load_thresholds", "measured"]

Thresholds = dict[str, dict[str, float]]
"""System name -> metric -> minimum."""


def measured(run: Path) -> dict[str, dict[str, float]]:
    """System -> metric -> mean, from ``run/metrics.json`` (written by ``save_run``)."""
    m = json.loads(read_text_regular(run / "metrics.json", limit=CONFIG))
    out: dict[str, dict[str, float]] = {}
    for row in m["summary"]:
        out.setdefault(row["system"], {})[row["metric"]] = float(row["mean"])
    return out


def check(run: Path, thresholds: Thresholds) -> list[str]:
    """One line per threshold not met (a system missing from the run fails all of its own)."""
    got = measured(run)
    failures = []
    for system, mins in thresholds.items():
        if system not in got:
            failures.append(f"{system}: not in {run}")
            continue
        for metric, floor in mins.items():
            value = got[system].get(metric)
            if value is None or value < floor:
                failures.append(f"{system} {metric} = {value} < {floor}")
    return failures


def load_thresholds(path: Path) -> dict[str, Thresholds]:
    """Every set of a thresholds file: set name -> system -> metric -> minimum."""
    table: dict[str, Thresholds] = tomllib.loads(read_text_regular(path, limit=CONFIG))
    return table
