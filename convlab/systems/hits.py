"""A system's hits from its views' hits: one view as it is, several fused with fixed weights.

Each view of a :class:`~convlab.systems.system.System` ranks docs (utterances or turns) by
its own best unit; :func:`fused_hits` fuses those rankings with the system's method by
:func:`convlab.fusion.fuse_carrying`, the function hybrid search fuses its dense and BM25 views
with, so a doc is scored from several unit sets at once. Each fused doc keeps the unit of the
view that ranked it best (ties: the view listed first), so resurrection brings back what was
embedded together for the view that found it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from convlab.fusion import Aligned, carried, fuse_carrying
from convlab.retrieval import SearchOptions
from convlab.systems.system import System, View

__all__ = ["DEPTH", "fused_hits", "rankings", "system_hits", "view_options", "with_units"]

DEPTH = 100
"""Docs each view is searched to before fusion, by default (``EvalConfig.depth``, the store)."""


def view_options(system: System, view: View, depth: int) -> SearchOptions:
    """How one view of ``system`` is searched: its options, the view's retrieval, ``depth`` docs.

    A view with its own BM25 parameters (:attr:`View.bm25`) searches with them.

    Fusion normalises each view's scores over its ``depth`` docs, so every caller of one
    system searches its views to the same depth.
    """
    bm25 = {} if view.bm25 is None else {"bm25": view.bm25}
    return system.options.replace(retrieval=view.retrieval, k=depth, **bm25)


def system_hits(system: System, view_hits: Sequence[pl.DataFrame], *, depth: int) -> pl.DataFrame:
    """A system's hits from its views' hits: one view as it is, several fused (fixed weights).

    The one place a system's views become its ranking: ``eval.run`` (every system whose
    weights are fixed) and the store's search (:meth:`convlab.store.Store.search`, the CLI, the
    panel) call it, so a system searched is the system measured.

    Args:
        system: the system.
        view_hits: its views' hits, in its view order, each searched with
            :func:`view_options` (``depth`` docs per query).
        depth: docs kept per query.

    Raises:
        ValueError: a system whose weights are still to be chosen by cross-validation (run its
            ``systems.chosen.toml`` instead), or a number of hits frames other than its views.
    """
    if len(view_hits) != len(system.views):
        raise ValueError(
            f"system {system.name!r} has {len(system.views)} views, {len(view_hits)} hits given"
        )
    if not system.fused:
        return view_hits[0]
    if system.tuning is not None:
        raise ValueError(
            f"system {system.name!r} has its weights chosen by cross-validation on labelled "
            "queries; search with fixed weights (a run's systems.chosen.toml)"
        )
    return fused_hits(
        view_hits, system.weights, method=system.fusion, params=system.fusion_params, depth=depth
    )


def fused_hits(
    view_hits: Sequence[pl.DataFrame],
    weights: Sequence[float] | None,
    *,
    method: str,
    params: Mapping[str, Any],
    depth: int,
    runs: Aligned | None = None,
) -> pl.DataFrame:
    """The views' hits fused into one ranking of at most ``depth`` docs per query.

    Args:
        view_hits: one hits frame per view (:data:`convlab.schema.HITS` columns).
        weights: one per view (``None``: all 1); a view of weight 0 brings no doc of its own.
        method: a fusion method of :data:`convlab.fusion.FUSIONS`.
        params: its parameters.
        depth: docs kept per query.
        runs: the views' rankings :class:`~convlab.fusion.Aligned` once, when the same views
            are fused many times (tuning); the result is the same.

    Returns:
        The first view's columns: ``score`` and ``rank`` the fused ones, the unit columns
        (``unit_id``, ``text``, ...) of the view that ranked the doc best.
    """
    fused = fuse_carrying(
        view_hits, weights, method=method, depth=depth, aligned_runs=runs, **params
    )
    return _as_hits(fused, view_hits[0])


def with_units(
    fused: pl.DataFrame, view_hits: Sequence[pl.DataFrame], weights: Sequence[float] | None
) -> pl.DataFrame:
    """A fused run (``query_id, doc_id, score, rank``) with each doc's unit columns.

    A doc's unit is that of the view of non-zero weight that ranked it best (ties: the view
    listed first: :func:`convlab.fusion.carried`, as in hybrid search); the columns and their
    order are the first view's.
    """
    return _as_hits(carried(fused, view_hits, weights), view_hits[0])


def _as_hits(fused: pl.DataFrame, first: pl.DataFrame) -> pl.DataFrame:
    """A fused run that carries the unit columns, as hits: the first view's columns and dtypes."""
    return fused.with_columns(pl.col("rank").cast(first.schema["rank"])).select(first.columns)


def rankings(view_hits: Sequence[pl.DataFrame]) -> Aligned:
    """The views' rankings aligned once (``query_id, doc_id, score, rank`` of each)."""
    return Aligned([h.select("query_id", "doc_id", "score", "rank") for h in view_hits])
