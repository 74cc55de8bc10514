"""What each system's embedding costs: tokens embedded per token of text, and CPU-seconds.

A system embeds the distinct texts of its dense views' units, once per embedder (a text that
``sequential`` and ``turn_pair`` share is embedded once; ``static:sequential`` embeds it again
with the static model). Its **tokens embedded** are those texts' tokens (``units.n_tokens``,
[CLS] and [SEP] included), divided by the **tokens of text** (the content tokens of every
chunk, what the messages say) to give ``tokens_per_text_token``: 1.0 would embed every token
of the history once. A late view (:mod:`convlab.strategies.late`) embeds no unit text: its
tokens are those of its passes (:func:`convlab.pipeline.late.late_plan`), run once per window
size and shared by every late view of that size. A system of BM25 views alone embeds nothing.

Its **CPU-seconds** are its tokens embedded under each embedder times that embedder's measured
rate in the run: the pass's CPU time (``BuildManifest.seconds["embed_cpu"]``) over the tokens
the pass embedded. The rate is known only when the pass embedded every text itself (a cold
cache: nothing read that an earlier run wrote; late views of one window reading the passes
another ran in the same build, ``late_shared``, do not count); with vectors read from the cache
it is null, and so are the CPU-seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from convlab.pipeline.late import late_plan
from convlab.strategies.late import late_window

if TYPE_CHECKING:
    from convlab.build import BuiltIndex
    from convlab.systems.system import System

__all__ = ["SYSTEM_COSTS", "pass_embedder", "pass_rates", "system_costs"]

SYSTEM_COSTS: dict[str, pl.DataType | type[pl.DataType]] = {
    "system": pl.String,
    "text_tokens": pl.Int64,
    "tokens_embedded": pl.Int64,
    "tokens_per_text_token": pl.Float64,
    "cpu_seconds": pl.Float64,
}
"""The columns of :func:`system_costs`' frame."""


def pass_embedder(index_key: str) -> str | None:
    """The view embedder of a built index's key: ``static`` for ``static:sequential``, else None."""
    head, sep, _ = index_key.partition(":")
    return head if sep else None


_Plans = dict[tuple[int, int], int]
"""Tokens of the passes of a chunks frame (by ``id``) at a window: each plan made once."""


class _Tokens:
    """Tokens embedded by one embedder: distinct unit texts, plus passes once per window."""

    def __init__(self, plans: _Plans) -> None:
        self.texts: list[pl.DataFrame] = []
        self.passes: dict[int, int] = {}
        self.plans = plans

    def add(self, b: BuiltIndex, key: str) -> None:
        window = late_window(key.rpartition(":")[2])
        if window is None:
            self.texts.append(b.units.select("text", "n_tokens"))
            return
        plan = (id(b.chunks), window)
        if plan not in self.plans:
            self.plans[plan] = late_plan(b.chunks, window).tokens
        self.passes[window] = self.plans[plan]

    def total(self) -> int:
        texts = int(pl.concat(self.texts).unique("text")["n_tokens"].sum()) if self.texts else 0
        return texts + sum(self.passes.values())


def pass_rates(
    built: Mapping[tuple[Any, str], BuiltIndex], plans: _Plans | None = None
) -> dict[tuple[Hashable, str | None], float | None]:
    """CPU-seconds per token embedded of each pass (a variant and a view embedder).

    A rate is None where the pass took vectors from the cache (or embedded nothing): its CPU
    time then says nothing of the embedder's rate. ``plans``: the late plans made so far, filled
    in here (:func:`system_costs` passes its own, so each plan is made once).
    """
    plans = {} if plans is None else plans
    tokens: dict[tuple[Hashable, str | None], _Tokens] = {}
    cpu: dict[tuple[Hashable, str | None], float | None] = {}
    for (variant, key), b in built.items():
        if not b.manifest.dense:
            continue
        p = (variant, pass_embedder(key))
        tokens.setdefault(p, _Tokens(plans)).add(b, key)
        counts = b.manifest.embedding
        earlier = counts.get("from_cache", 0) - counts.get("late_shared", 0)  # other runs'
        cold = earlier == 0 and "embed_cpu" in b.manifest.seconds
        cpu[p] = b.manifest.seconds["embed_cpu"] if cold else None
    rates: dict[tuple[Hashable, str | None], float | None] = {}
    for p, counted in tokens.items():
        total = counted.total()
        seconds = cpu[p]
        rates[p] = seconds / total if seconds is not None and total else None
    return rates


def system_costs(
    systems: Sequence[System],
    built: Mapping[tuple[Any, str], BuiltIndex],
    variant_of: Callable[[System], Hashable],
) -> pl.DataFrame:
    """One row per system (:data:`SYSTEM_COSTS`).

    Args:
        systems: the systems of a run.
        built: the run's built indexes by (variant, :attr:`View.index_key`).
        variant_of: a system's variant (its text format and key expansion), the key's first part.

    Example:
        See ``tests/evaluation/test_system_costs.py``: two views sharing a text embed it once.
    """
    plans: _Plans = {}  # the frames stay in ``built`` for the call, so their ids do too
    rates = pass_rates(built, plans)
    rows = []
    for system in systems:
        variant = variant_of(system)
        chunks = built[(variant, system.views[0].index_key)].chunks
        text_tokens = int(chunks["n_tokens"].sum()) if chunks.height else 0
        per_embedder: dict[str | None, _Tokens] = {}
        for view in system.views:
            if not view.retrieval.needs_vectors:
                continue
            b = built[(variant, view.index_key)]
            per_embedder.setdefault(view.embedder, _Tokens(plans)).add(b, view.index_key)
        tokens = {e: counted.total() for e, counted in per_embedder.items()}
        embedded = sum(tokens.values())
        cpu: float | None = 0.0
        for e, n in tokens.items():
            rate = rates.get((variant, e))
            cpu = None if rate is None or cpu is None else cpu + n * rate
        rows.append(
            (
                system.name,
                text_tokens,
                embedded,
                embedded / text_tokens if text_tokens else 0.0,
                None if cpu is None else round(cpu, 3),
            )
        )
    return pl.DataFrame(rows, schema=SYSTEM_COSTS, orient="row")
