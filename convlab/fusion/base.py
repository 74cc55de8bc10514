"""What every fusion method shares: the run frames it takes, per-query normalisation, ranking.

A *run* is a polars frame of one system's scored docs, ``query_id, doc_id, score`` (higher is
better), with an optional ``rank`` (1 is best; when absent it is derived from ``score``, ties
broken by ``doc_id`` ascending). Runs may hold different docs for a query and different queries.

Fusion methods live one per file (:mod:`convlab.fusion.rrf`, :mod:`convlab.fusion.convex`,
:mod:`convlab.fusion.combsum`, :mod:`convlab.fusion.combmnz`) and register themselves in
:data:`FUSIONS`; each is ``method(runs, weights=None, **params) -> run``. :func:`fuse` looks one up
by name.

The fused run has one row per (query, doc) retrieved by at least one run of non-zero weight:
``query_id, doc_id, score, rank``, sorted by ``query_id`` then ``rank``. Ties of the fused score
are broken by ``doc_id`` ascending (string order), so the same inputs always give the same
ranking. A run of weight 0 is left out entirely: its docs enter the fused run only when another
run retrieved them too.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence

import polars as pl

from convlab.registry import Registry

__all__ = [
    "FUSIONS",
    "NORMS",
    "Aligned",
    "FusionMethod",
    "Runs",
    "aligned",
    "carried",
    "check_params",
    "check_weights",
    "describe",
    "fuse",
    "fuse_carrying",
    "normalised",
    "ranked",
    "summed",
]

FusionMethod = Callable[..., pl.DataFrame]
FUSIONS: Registry[FusionMethod] = Registry("fusion")
"""Fusion methods by name (``rrf``, ``convex``, ``combsum``, ``combmnz``): one module each.

Everything that offers a fusion method reads this registry (a system's ``fusion``, hybrid
search's :attr:`convlab.retrieval.RetrievalOptions.fusion`, ``convlab search --fusion``, the search
panel), so a new method is one module that registers itself here."""

NORMS = ("none", "min-max", "z-score")
"""Per-query score normalisations (see :func:`normalised`)."""

_RUN_SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64}
FUSED_SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64, "rank": pl.Int32}


def check_weights(runs: Sequence[pl.DataFrame], weights: Sequence[float] | None) -> list[float]:
    """The weights as a list of floats (all 1.0 when ``None``), checked against the runs.

    Raises:
        ValueError: no runs, a weight count that differs from the run count, a negative or
            non-finite weight, or every weight zero.
    """
    if not runs:
        raise ValueError("fusion needs at least one run")
    if weights is None:
        return [1.0] * len(runs)
    out = [float(w) for w in weights]
    if len(out) != len(runs):
        raise ValueError(f"{len(out)} weights for {len(runs)} runs: give one weight per run")
    for i, w in enumerate(out):
        if not math.isfinite(w) or w < 0:
            raise ValueError(f"weight {i} is {w}: weights must be finite and >= 0")
    if not any(out):
        raise ValueError("every weight is 0: at least one run must count")
    return out


def _checked(run: pl.DataFrame, index: int) -> pl.DataFrame:
    """``query_id, doc_id, score, rank`` of run ``index``, validated, rank derived if absent."""
    missing = [c for c in _RUN_SCHEMA if c not in run.columns]
    if missing:
        raise ValueError(
            f"run {index} lacks column(s) {', '.join(missing)}: a run has query_id, doc_id, score"
        )
    frame = run.select(
        pl.col("query_id").cast(pl.String),
        pl.col("doc_id").cast(pl.String),
        pl.col("score").cast(pl.Float64),
        *([pl.col("rank").cast(pl.Int64)] if "rank" in run.columns else []),
    )
    if frame.select(pl.any_horizontal(pl.all().is_null().any())).item():
        raise ValueError(f"run {index} has null query_id, doc_id, score or rank values")
    bad = frame.filter(~pl.col("score").is_finite())
    if bad.height:
        q, d, s = bad.row(0)[:3]
        raise ValueError(f"run {index}: score of ({q}, {d}) is {s}; scores must be finite")
    dup = frame.filter(pl.struct("query_id", "doc_id").is_duplicated())
    if dup.height:
        q, d = dup.row(0)[:2]
        raise ValueError(f"run {index} scores ({q}, {d}) more than once; one row per query and doc")
    if "rank" not in frame.columns:
        frame = frame.sort(
            ["query_id", "score", "doc_id"], descending=[False, True, False]
        ).with_columns(pl.int_range(1, pl.len() + 1).over("query_id").alias("rank"))
    elif frame.filter(pl.col("rank") < 1).height:
        raise ValueError(f"run {index} has a rank below 1; ranks start at 1")
    return frame


def normalised(score: pl.Expr, norm: str) -> pl.Expr:
    """``score`` normalised within each query (to be used in a frame with ``query_id``).

    - ``none``: the raw score;
    - ``min-max``: (s - min) / (max - min), 0 when max == min (Lee, SIGIR 1997);
    - ``z-score``: (s - mean) / sd, sd the population standard deviation, 0 when sd == 0
      (Montague & Aslam, CIKM 2001).

    Raises:
        ValueError: an unknown ``norm``, listing the valid ones.
    """
    if norm == "none":
        return score
    if norm == "min-max":
        lo, hi = score.min().over("query_id"), score.max().over("query_id")
        return pl.when(hi > lo).then((score - lo) / (hi - lo)).otherwise(0.0)
    if norm == "z-score":
        mean, sd = score.mean().over("query_id"), score.std(ddof=0).over("query_id")
        return pl.when(sd > 0).then((score - mean) / sd).otherwise(0.0)
    raise ValueError(f"unknown norm {norm!r}; valid: {', '.join(NORMS)}")


class Aligned:
    """Runs aligned once per kind of value, for many fusions of the same runs (tuning weights).

    Every fusion method aligns its runs: one row per (query, doc) any run retrieved, one value
    column per run. Fusing the same runs under many weight settings would align them again each
    time; passed instead of the list of runs, this object aligns them once per value (a
    normalisation, RRF's ``k``) and each fusion only keeps the rows and columns of its runs of
    non-zero weight. The result is the same as fusing the list. The runs must not change while
    it is in use.

    Example:
        >>> runs = Aligned([run_a, run_b, run_c])  # doctest: +SKIP
        >>> [fuse(runs, w, method="convex") for w in settings]  # doctest: +SKIP
    """

    def __init__(self, runs: Sequence[pl.DataFrame]) -> None:
        self.runs = list(runs)
        self._checked: dict[int, pl.DataFrame] = {}
        self._wide: dict[str, pl.DataFrame] = {}

    def __len__(self) -> int:
        return len(self.runs)

    def wide(self, value: Callable[[], pl.Expr]) -> pl.DataFrame:
        """``query_id, doc_id, v0 .. v{n-1}``: every run's value (null: not retrieved)."""
        key = str(value())
        if key not in self._wide:
            frames = [
                self.checked(i).select("query_id", "doc_id", value().alias(f"v{i}"))
                for i in range(len(self.runs))
            ]
            wide = pl.concat([f.select("query_id", "doc_id") for f in frames]).unique()
            for f in frames:
                wide = wide.join(f, on=["query_id", "doc_id"], how="left")
            self._wide[key] = wide
        return self._wide[key]

    def checked(self, i: int) -> pl.DataFrame:
        """Run ``i`` validated, with its rank (see the module's contract)."""
        if i not in self._checked:
            self._checked[i] = _checked(self.runs[i], i)
        return self._checked[i]


Runs = Sequence[pl.DataFrame] | Aligned
"""What a fusion method takes: the run frames, or the same runs :class:`Aligned` once."""


def aligned(
    runs: Runs, weights: Sequence[float] | None, value: Callable[[], pl.Expr]
) -> tuple[pl.DataFrame, list[float]]:
    """Runs of non-zero weight side by side: one row per (query, doc) any of them retrieved.

    Args:
        runs: the runs (or :class:`Aligned`).
        weights: one per run (``None``: all 1).
        value: builds the per-run value from the run's ``score`` and ``rank`` columns
            (evaluated in a frame of that run alone, so ``.over("query_id")`` is per run).

    Returns:
        ``query_id, doc_id, v0, v1, ...`` (null where the run did not retrieve the doc) and the
        weights of the runs kept, in the same order as the ``v`` columns.
    """
    source = runs if isinstance(runs, Aligned) else Aligned(runs)
    ws = check_weights(source.runs, weights)
    kept = [i for i, w in enumerate(ws) if w > 0]
    wide = source.wide(value)
    if len(kept) < len(ws):  # a doc only runs of weight 0 retrieved is not a candidate
        wide = wide.filter(pl.any_horizontal([pl.col(f"v{i}").is_not_null() for i in kept]))
    wide = wide.select(
        "query_id", "doc_id", *[pl.col(f"v{i}").alias(f"v{j}") for j, i in enumerate(kept)]
    )
    return wide, [ws[i] for i in kept]


def summed(
    runs: Runs, weights: Sequence[float] | None, norm: str
) -> tuple[pl.DataFrame, pl.Expr, pl.Expr]:
    """What CombSUM and CombMNZ share: the runs aligned, the weighted sum and the hit count.

    Args:
        runs: the runs.
        weights: one per run (``None``: all 1).
        norm: the per-run, per-query normalisation φ_i (see :func:`normalised`).

    Returns:
        The aligned frame (:func:`aligned`), Σ_{i : d ∈ run_i} w_i · φ_i(d) over it (a run that
        did not retrieve d adds 0), and |{i : d ∈ run_i}| (as a float), as expressions.
    """
    wide, ws = aligned(runs, weights, lambda: normalised(pl.col("score"), norm))
    columns = [f"v{j}" for j in range(len(ws))]
    total = pl.sum_horizontal(
        [pl.col(c).fill_null(0.0) * w for c, w in zip(columns, ws, strict=True)]
    )
    hits = pl.sum_horizontal([pl.col(c).is_not_null().cast(pl.Float64) for c in columns])
    return wide, total, hits


def ranked(frame: pl.DataFrame, score: pl.Expr) -> pl.DataFrame:
    """``query_id, doc_id, score, rank`` ranked per query by ``score`` then ``doc_id``."""
    return (
        frame.select("query_id", "doc_id", score.cast(pl.Float64).alias("score"))
        .sort(["query_id", "score", "doc_id"], descending=[False, True, False])
        .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("query_id").alias("rank"))
    )


def fuse(
    runs: Runs,
    weights: Sequence[float] | None = None,
    *,
    method: str = "rrf",
    depth: int | None = None,
    **params: object,
) -> pl.DataFrame:
    """Fuse ``runs`` with the method registered as ``method``, keeping ``depth`` docs per query.

    Example:
        >>> a = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["d1", "d2"], "score": [2.0, 1.0]})
        >>> b = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["d2", "d3"], "score": [5.0, 4.0]})
        >>> fuse([a, b], method="rrf", k=0)["doc_id"].to_list()
        ['d2', 'd1', 'd3']

    Raises:
        ValueError: an unknown method (listing the valid ones), bad weights, bad runs, or a
            ``depth`` below 1.
    """
    if depth is not None and depth < 1:
        raise ValueError(f"depth is {depth}; it must be >= 1 (or None for every doc)")
    out = FUSIONS.get(method)(runs, weights, **params)
    return out if depth is None else out.filter(pl.col("rank") <= depth)


def describe(method: str) -> str:
    """What the scores of ``method`` are: the first line of its module's docstring.

    Example:
        >>> describe("combsum")
        "CombSUM: the (weighted) sum of a doc's scores over the runs that retrieved it"

    Raises:
        ValueError: an unknown method, listing the valid ones.
    """
    module = inspect.getmodule(FUSIONS.get(method))
    doc = inspect.getdoc(module) if module is not None else None
    return (doc or method).splitlines()[0].rstrip(".")


def check_params(method: str, params: Mapping[str, object]) -> None:
    """Refuse a parameter ``method`` does not take, or a value it cannot use.

    The parameters it takes are its keyword-only ones; a ``norm`` must be one of
    :data:`NORMS`, any other value a finite number.

    Raises:
        ValueError: an unknown method, a parameter it does not take (naming those it takes), or
            a bad value.
    """
    fn = FUSIONS.get(method)
    known = [
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    for name in params:
        if name not in known:
            takes = ", ".join(known) or "none"
            raise ValueError(f"fusion {method} takes no parameter {name!r}; it takes {takes}")
        value = params[name]
        if name == "norm" and value not in NORMS:
            raise ValueError(f"fusion {method}: norm {value!r} is not one of {', '.join(NORMS)}")
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if name != "norm" and not (number and math.isfinite(float(value))):  # type: ignore[arg-type]
            raise ValueError(f"fusion {method}: {name} {value!r} is not a finite number")


def fuse_carrying(
    runs: Sequence[pl.DataFrame],
    weights: Sequence[float] | None = None,
    *,
    method: str,
    depth: int | None = None,
    aligned_runs: Aligned | None = None,
    **params: object,
) -> pl.DataFrame:
    """Fuse ``runs`` (:func:`fuse`); each doc carries the columns of the run that ranked it best.

    The one way views are fused, for hybrid search (:mod:`convlab.retrieval.fused`) and for a
    system's views (:mod:`convlab.systems.hits`): a run is one view's doc ranking, and its other
    columns (the doc's unit) come with the doc. The run that ranked it best is the one of
    non-zero weight with the lowest ``rank`` (ties: the run listed first).

    Args:
        runs: ``query_id, doc_id, score, rank`` and any further columns, one row per (query,
            doc); every run has the same further columns.
        weights: one per run (``None``: all 1).
        method: a method of :data:`FUSIONS`.
        depth: docs kept per query (``None``: all).
        aligned_runs: the runs' rankings :class:`Aligned` once, when the same runs are fused
            many times (tuning); the result is the same.
        **params: the method's parameters.

    Returns:
        ``query_id, doc_id, score, rank`` (fused; ``rank`` Int32) and the carried columns,
        sorted by ``query_id`` then ``rank``.

    Example:
        >>> a = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["d1", "d2"], "score": [2.0, 1.0],
        ...                   "rank": [1, 2], "unit": ["a1", "a2"]})
        >>> b = pl.DataFrame({"query_id": ["q"], "doc_id": ["d2"], "score": [9.0], "rank": [1],
        ...                   "unit": ["b2"]})
        >>> fuse_carrying([a, b], method="rrf", k=0).rows()  # d2: 1/2 + 1/1, b's unit
        [('q', 'd2', 1.5, 1, 'b2'), ('q', 'd1', 1.0, 2, 'a1')]
    """
    ranking = aligned_runs or Aligned(
        [r.select("query_id", "doc_id", "score", "rank") for r in runs]
    )
    return carried(fuse(ranking, weights, method=method, depth=depth, **params), runs, weights)


def carried(
    fused: pl.DataFrame, runs: Sequence[pl.DataFrame], weights: Sequence[float] | None
) -> pl.DataFrame:
    """A fused run with each doc's further columns from the run of ``runs`` that ranked it best.

    The best run is the one of non-zero weight with the lowest ``rank`` for the doc (ties: the
    run listed first); see :func:`fuse_carrying`.

    Returns:
        ``fused``'s columns then the runs' further columns, sorted by ``query_id``, ``rank``.
    """
    used = [i for i, w in enumerate(weights or [1.0] * len(runs)) if w > 0]
    candidates = pl.concat(
        [runs[i].with_columns(pl.lit(i, dtype=pl.Int32).alias("_run")) for i in used],
        how="vertical_relaxed",
    )
    best = candidates.sort("query_id", "doc_id", "rank", "_run").unique(
        ["query_id", "doc_id"], keep="first", maintain_order=True
    )
    out = fused.join(best.drop("score", "rank", "_run"), on=["query_id", "doc_id"], how="left")
    return out.sort("query_id", "rank")
