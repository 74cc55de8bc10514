"""The regression registry: every figure the README or a result page states, with what makes it.

Anserini's regressions and pyserini's two-click reproductions are the model (Lin et al., SIGIR
2022, "Building a Culture of Reproducibility in Academic Research"): one file per run names the
commands that make the run, the data they read, the figures the run must give and how far a
figure may move. ``eval/regressions/*.toml`` holds them; ``python -m eval.reproduce`` runs them at
HEAD, checks every figure and writes the pages and the README's table from the run folders.

A regression file::

    name = "locomo"                  # the run folder runs/reproduce/locomo and its page
    title = "LoCoMo, all 10 conversations"
    tier = "quick"                   # ci < quick < full: the smallest tier that runs it
    data = "{datasets}/locomo/locomo10.json"
    data_sha256 = "..."              # of the file, or of every file of a folder (data_sha256)
    page = true                      # docs/site_src/results/<name>.md from the run folder
    seconds = 412.0                  # measured by the last eval.reproduce that ran it
    steps = [["eval.run", "--data", "{data}", "--out", "{run}", "--cache", "{cache}"]]
    headline = { system = "fusion:convex", baseline = "bm25:message", metric = "recall@5" }
    published = [                    # figures published elsewhere, checked as given
        { system = "...", metric = "...", expected = 0.7064, tolerance = 0.005, level = "turn" },
    ]
    # figures: recorded from the run by python -m eval.reproduce --record; never edit by hand
    figures = [                      # metrics.json's summary, or official summary with level
        { system = "fusion:convex", metric = "recall@5", expected = 0.604, tolerance = 0.002 },
    ]

Every key is top-level (no ``[table]`` header), so the recorded figures can close the file.
``headline`` is the regression's row of the README's findings table.

``{datasets}`` is the data root (``CONVLAB_DATA``, default ``../shared/datasets``), ``{data}`` the
regression's ``data``, ``{run}`` its run folder, ``{runs}`` the folder of every run folder and
``{cache}`` the shared embedding cache. A step is a module and its arguments, run as
``python -m`` with the interpreter running the registry.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import numpy as np
import polars as pl

__all__ = [
    "TIERS",
    "Checked",
    "Figure",
    "Headline",
    "Regression",
    "RegressionError",
    "check",
    "data_sha256",
    "figure_value",
    "in_tier",
    "load_regressions",
    "paired_values",
    "recorded_figures",
    "with_figures",
]

RECORDED = (
    "# figures: recorded from the run by python -m eval.reproduce --record; never edit by hand"
)
"""The line after which a regression file holds its recorded figures (rewritten by --record)."""

OFFICIAL_METRICS = ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10")
"""The official LongMemEval measures a regression records (those the data's README reports)."""

TIERS = ("ci", "quick", "full")
"""The tiers, each running its own regressions and those of every smaller tier."""


class RegressionError(ValueError):
    """A regression that cannot be run or checked; the message is one line naming the file."""


Tier = Literal["ci", "quick", "full"]
Level = Literal["turn", "session", "session_keys"]
Average = Literal["strict", "non_abstention"]


class Figure(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One figure a run must give: a system's mean of a metric, within ``tolerance``.

    ``level`` and ``average`` name a LongMemEval official figure (``official_summary``); without
    them the figure is a row of ``metrics.json``'s ``summary``.
    """

    system: str
    metric: str
    expected: float
    tolerance: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.001
    level: Level | None = None
    average: Average | None = None


class Headline(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A regression's row of the README's findings table: ``system`` against ``baseline``.

    ``order`` places the row (smallest first; ties by the regression's name).
    """

    system: str
    baseline: str
    metric: str
    level: Level | None = None
    average: Average | None = None
    order: int = 0


class Regression(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One run: the steps that make it, the data it reads, and the figures it must give."""

    name: Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9_-]*$")]
    title: str
    tier: Tier
    steps: list[list[str]]
    data: str
    data_sha256: Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]
    figures: list[Figure] = []
    published: list[Figure] = []
    page: bool = False
    headline: Headline | None = None
    seconds: float | None = None
    source: str = ""


class Checked(msgspec.Struct, frozen=True):
    """A figure as the run gave it: ``ok`` when within tolerance of the expected value."""

    regression: str
    system: str
    metric: str
    expected: float
    value: float | None
    tolerance: float
    ok: bool


def in_tier(regression: Regression, tier: str) -> bool:
    """Whether ``tier`` runs ``regression`` (a tier runs every smaller tier's regressions)."""
    return TIERS.index(regression.tier) <= TIERS.index(tier)


def load_regressions(folder: Path) -> list[Regression]:
    """Every ``*.toml`` of ``folder``, by name; a bad file raises one line naming it."""
    out = []
    for path in sorted(folder.glob("*.toml")):
        try:
            reg = msgspec.toml.decode(path.read_bytes(), type=Regression)
        except msgspec.DecodeError as e:
            raise RegressionError(f"{path}: {e}") from None
        if reg.name != path.stem:
            raise RegressionError(f"{path}: name {reg.name!r} is not the file's name {path.stem!r}")
        if not reg.steps or any(not step for step in reg.steps):
            raise RegressionError(f"{path}: steps must be a non-empty list of commands")
        out.append(msgspec.structs.replace(reg, source=str(path)))
    if not out:
        raise RegressionError(f"{folder}: no regression files (*.toml)")
    return out


def data_sha256(path: Path) -> str:
    """sha256 of a file's bytes, or of a folder's files (their paths and bytes, sorted)."""
    h = hashlib.sha256()
    if path.is_file():
        h.update(path.read_bytes())
        return h.hexdigest()
    if not path.is_dir():
        raise RegressionError(f"{path}: no such file or folder")
    for f in sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(f.relative_to(path).as_posix().encode())
        h.update(b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def _metrics(run: Path) -> dict[str, object]:
    path = run / "metrics.json"
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RegressionError(f"{path}: missing (the run did not finish)") from None
    if not isinstance(value, dict):
        raise RegressionError(f"{path}: expected a JSON object")
    return value


def _rows(rows: object, run: Path) -> list[dict[str, Any]]:
    """``rows`` if it is a list of objects (a ``metrics.json`` table), else RegressionError."""
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise RegressionError(f"{run / 'metrics.json'}: a table is not a list of objects")
    return rows


def figure_value(
    run: Path, figure: Figure | Headline, record: dict[str, object] | None = None
) -> float | None:
    """The mean the run gave for ``figure``; None if absent (``record``: its metrics.json, read)."""
    name = figure.system
    record = _metrics(run) if record is None else record
    if figure.level is not None:
        official = record.get("official")
        rows = official.get("summary", []) if isinstance(official, dict) else []
        want = {"level": figure.level, "average": figure.average or "strict"}
    else:
        rows = record.get("summary", [])
        want = {}
    for row in _rows(rows, run):
        if (
            row.get("system") == name
            and row.get("metric") == figure.metric
            and all(row.get(k) == v for k, v in want.items())
        ):
            return float(row["mean"])
    return None


def check(run: Path, regression: Regression) -> list[Checked]:
    """Every figure of ``regression`` (recorded and published) against the run folder ``run``."""
    out = []
    record = _metrics(run)  # once, not once per figure
    for f in [*regression.figures, *regression.published]:
        value = figure_value(run, f, record)
        ok = value is not None and math.isclose(value, f.expected, abs_tol=f.tolerance + 1e-12)
        out.append(Checked(regression.name, f.system, f.metric, f.expected, value, f.tolerance, ok))
    return out


def paired_values(run: Path, headline: Headline) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values of the headline's system and baseline, paired by query.

    A convlab metric is read from ``per_query.parquet``; an official one from
    ``official_per_query.parquet`` at its level, over the questions of its average
    (``official_questions.parquet``).
    """
    if headline.level is None:
        frame = pl.read_parquet(run / "per_query.parquet").filter(
            pl.col("metric") == headline.metric
        )
    else:
        frame = pl.read_parquet(run / "official_per_query.parquet").filter(
            (pl.col("metric") == headline.metric) & (pl.col("level") == headline.level)
        )
        questions = pl.read_parquet(run / "official_questions.parquet")
        keep = questions.filter(pl.col(headline.average or "strict")).select("query_id")
        frame = frame.join(keep, on="query_id", how="semi")
    a = frame.filter(pl.col("system") == headline.system).select("query_id", "value")
    b = frame.filter(pl.col("system") == headline.baseline).select("query_id", "value")
    both = a.join(b, on="query_id", suffix="_b").sort("query_id")
    if both.is_empty():
        raise RegressionError(
            f"{run}: no queries scored by both {headline.system!r} and {headline.baseline!r}"
            f" on {headline.metric}"
        )
    return both["value"].to_numpy(), both["value_b"].to_numpy()


def recorded_figures(run: Path, *, tolerance: float) -> list[Figure]:
    """The figures a result page of ``run`` states: every system's headline metrics.

    ``metrics.json``'s summary rows of the run's headline metrics (``config.json``), and under
    LongMemEval's protocol the official means of :data:`OFFICIAL_METRICS` at every level, both
    averages.
    """
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    headline = set(config["config"]["headline"])
    record = _metrics(run)
    out = []
    for r in _rows(record.get("summary", []), run):
        if r["metric"] in headline:
            out.append(Figure(r["system"], r["metric"], round(r["mean"], 4), tolerance))
    official = record.get("official")
    for r in official.get("summary", []) if isinstance(official, dict) else []:
        if r["metric"] in OFFICIAL_METRICS:
            out.append(
                Figure(
                    r["system"],
                    r["metric"],
                    round(r["mean"], 4),
                    tolerance,
                    level=r["level"],
                    average=r["average"],
                )
            )
    return out


def with_figures(text: str, figures: list[Figure]) -> str:
    """A regression file's text with its recorded figures (after :data:`RECORDED`) replaced."""
    if RECORDED not in text and re.search(r"(?m)^figures\s*=", text):
        raise RegressionError(f"figures outside the recorded part (after {RECORDED!r})")
    head = text.split(RECORDED, 1)[0].rstrip("\n")
    lines = [head, "", RECORDED, "figures = ["]
    for f in figures:
        fields = {k: v for k, v in msgspec.structs.asdict(f).items() if v is not None}
        lines.append(
            "    { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in fields.items()) + " },"
        )
    lines.append("]")
    return "\n".join(lines) + "\n"
