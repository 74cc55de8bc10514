"""Figures from evaluation frames.

Recall@k curves, coverage against budget, the system x policy grid (answer containment and
coverage against tokens used), per-category bars, unit length histograms. Each
function returns a matplotlib Figure a reader understands without the code (title, axis labels,
legend).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.figure import Figure

__all__ = [
    "coverage_by_budget",
    "frontier",
    "policy_grid",
    "recall_at_k",
    "recall_by_category",
    "unit_lengths",
    "unit_map",
]


def recall_at_k(
    summary: pl.DataFrame, *, title: str = "Recall@k by system (share of the evidence in the top k)"
) -> Figure:
    """Recall@k against k, one line per system (from ``Evaluation.summary``)."""
    s = summary.filter(pl.col("metric").str.starts_with("recall@")).with_columns(
        pl.col("metric").str.split("@").list.get(1).cast(pl.Int32).alias("k")
    )
    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    for (system,), part in s.sort("k").group_by("system", maintain_order=True):
        ax.plot(part["k"], part["mean"], marker="o", label=str(system))
    ax.set(title=title, xlabel="k (docs retrieved)", ylabel="mean Recall@k")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig


_BUDGET_MEASURES = {
    "coverage": ("Share of relevant docs fully brought back, by token budget", "evidence coverage"),
    "evidence_token_recall": (
        "Share of the relevant docs' tokens brought back, by token budget",
        "evidence token recall",
    ),
    "answer_contained": (
        "Share of answers found in the resurrected context, by token budget",
        "answer containment",
    ),
}


def coverage_by_budget(
    budgets: pl.DataFrame,
    *,
    measure: str = "coverage",
    title: str | None = None,
) -> Figure:
    """Mean of a resurrection ``measure`` against the budget, one line per system.

    ``measure`` is ``coverage`` (strict: whole relevant docs), ``evidence_token_recall``
    (partial credit) or ``answer_contained``.
    """
    if measure not in _BUDGET_MEASURES:
        raise ValueError(f"unknown measure {measure!r}; valid: {', '.join(_BUDGET_MEASURES)}")
    default_title, ylabel = _BUDGET_MEASURES[measure]
    b = budgets.group_by("system", "budget").agg(pl.col(measure).mean()).sort("budget")
    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    for (system,), part in b.group_by("system", maintain_order=True):
        ax.plot(part["budget"], part[measure], marker="o", label=str(system))
    ax.set_xscale("log", base=2)
    ax.set(
        title=title or default_title,
        xlabel="budget (tokens, log scale)",
        ylabel=ylabel,
    )
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig


def recall_by_category(
    by_category: pl.DataFrame, metric: str = "recall@5", *, title: str | None = None
) -> Figure:
    """Grouped bars: ``metric`` per question category, one bar per system."""
    d = by_category.filter(pl.col("metric") == metric)
    cats = sorted(d["category"].drop_nulls().unique().to_list())
    systems = d["system"].unique(maintain_order=True).to_list()
    fig, ax = plt.subplots(figsize=(max(7, 1.2 * len(cats) * max(1, len(systems)) / 3), 4.5))
    width = 0.8 / max(1, len(systems))
    values: Mapping[tuple[str, str], float] = {
        (s, c): v for s, c, v in d.select("system", "category", "mean").iter_rows()
    }
    for i, s in enumerate(systems):
        xs = [j + i * width for j in range(len(cats))]
        ax.bar(xs, [values.get((s, c), 0.0) for c in cats], width, label=s)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(cats))], cats)
    ax.set(title=title or f"{metric} by question category", xlabel="category", ylabel=metric)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def unit_lengths(units: Mapping[str, pl.DataFrame], *, budget: int = 256) -> Figure:
    """Histogram of unit token counts per strategy, with the model's limit marked."""
    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    for name, u in units.items():
        ax.hist(u["n_tokens"].to_numpy(), bins=40, range=(0, budget), alpha=0.45, label=name)
    ax.axvline(budget, color="k", linestyle="--", label=f"limit ({budget})")
    ax.set(title="Tokens per unit, by strategy", xlabel="tokens the model sees", ylabel="units")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def unit_map(
    vectors: np.ndarray,
    conversations: Sequence[str],
    *,
    query: np.ndarray | None = None,
    hit_rows: Sequence[int] = (),
    title: str = "Units in 2-D (PCA), coloured by conversation",
) -> Figure:
    """A PCA map of unit vectors, coloured by conversation, with a query and its hits marked."""
    from convlab.extras import require

    decomposition = require("sklearn.decomposition", "eval", feature="the PCA map")
    pca = decomposition.PCA(n_components=2, random_state=0).fit(vectors)
    xy = pca.transform(vectors)
    fig, ax = plt.subplots(figsize=(7, 6))
    convs = sorted(set(conversations))
    colour = {c: i for i, c in enumerate(convs)}
    ax.scatter(
        xy[:, 0], xy[:, 1], c=[colour[c] for c in conversations], cmap="tab20", s=8, alpha=0.6
    )
    if len(hit_rows):
        h = xy[list(hit_rows)]
        ax.scatter(h[:, 0], h[:, 1], facecolors="none", edgecolors="k", s=80, label="hits")
    if query is not None:
        q = pca.transform(query.reshape(1, -1))
        ax.scatter(q[:, 0], q[:, 1], marker="*", c="red", s=250, label="query")
    ax.set(title=title, xlabel="first principal component", ylabel="second principal component")
    if query is not None or len(hit_rows):
        ax.legend()
    fig.tight_layout()
    return fig


_POLICY_STYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)))
_POLICY_MARKERS = ("o", "s", "^", "D", "v")


def policy_grid(
    means: pl.DataFrame,
    *,
    systems: Sequence[str] | None = None,
    title: str = "Resurrection policies: what comes back against the tokens it costs",
) -> Figure:
    """Answer containment (left) and coverage (right) against mean tokens used.

    One line per (system, policy), a point per budget; colour per system, line style and marker
    per policy, so 20 lines stay apart. Policies whose points are the same for a system (with
    single-message units ``unit``, ``doc`` and ``unit+doc`` bring back the same text) are one
    line, labelled ``system + unit = doc = unit+doc``.

    Args:
        means: :func:`convlab.evaluation.policy_grid.grid_means` (``system, policy, budget,
            tokens_used, answer_contained, coverage``).
        systems: the systems drawn, in this order (default: all of ``means``'s).
        title: the figure's title.

    Raises:
        ValueError: a system in ``systems`` that is not in ``means`` (naming the ones that are).
    """
    known = means["system"].unique(maintain_order=True).to_list()
    chosen = list(systems) if systems is not None else known
    unknown = [s for s in chosen if s not in known]
    if unknown:
        raise ValueError(f"systems not in the grid: {unknown}; the grid's: {known}")
    policies = means["policy"].unique(maintain_order=True).to_list()
    fig, axes = plt.subplots(1, 2, figsize=(15, 5.5), sharex=True)
    panels = (("answer_contained", "answer containment"), ("coverage", "evidence coverage"))
    for ax, (measure, label) in zip(axes, panels, strict=True):
        for i, system in enumerate(chosen):
            for j, names, part in _distinct_lines(means, system, policies):
                ax.plot(
                    part["tokens_used"],
                    part[measure],
                    color=f"C{i % 10}",
                    linestyle=_POLICY_STYLES[j % len(_POLICY_STYLES)],
                    marker=_POLICY_MARKERS[j % len(_POLICY_MARKERS)],
                    label=f"{system} + {' = '.join(names)}",
                )
        ax.set_xscale("log", base=2)
        ax.set(xlabel="mean tokens used (a point per budget)", ylabel=label)
        ax.set_ylim(bottom=0)  # containment stays low: a fixed 0..1 would flatten its lines
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    handles, labels = axes[0].get_legend_handles_labels()
    # the legend in a right margin of the figure itself: saved whole without bbox_inches
    fig.legend(handles, labels, fontsize=7, loc="center left", bbox_to_anchor=(0.8, 0.5))
    fig.tight_layout(rect=(0, 0, 0.8, 1))
    return fig


def _distinct_lines(
    means: pl.DataFrame, system: str, policies: list[str]
) -> list[tuple[int, list[str], pl.DataFrame]]:
    """``(policy index, policy names, points)`` of one system, identical lines merged."""
    lines: list[tuple[int, list[str], pl.DataFrame]] = []
    cols = ["budget", "tokens_used", "answer_contained", "coverage"]
    for j, policy in enumerate(policies):
        part = means.filter((pl.col("system") == system) & (pl.col("policy") == policy))
        part = part.sort("budget")
        if part.height == 0:
            continue
        same = next((ln for ln in lines if ln[2].select(cols).equals(part.select(cols))), None)
        if same is None:
            lines.append((j, [policy], part))
        else:
            same[1].append(policy)
    return lines


def frontier(table: pl.DataFrame, default: str, *, metric: str = "recall@5") -> Figure:
    """``metric`` against embedding cost, one panel per data set (a frontier table's rows).

    The cost axis is CPU-seconds (log scale above 1) where every system of the data set has them,
    else
    tokens embedded per token of text; today's default is the red star.
    """
    part = table.filter(pl.col("metric") == metric)
    datasets = list(dict.fromkeys(part["data"].to_list()))
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets), 4.5), squeeze=False)
    for ax, data in zip(axes[0], datasets, strict=True):
        rows = part.filter(pl.col("data") == data)
        cpu = rows["cpu_seconds"].null_count() == 0
        x = rows["cpu_seconds" if cpu else "tokens_per_text_token"].to_numpy()
        for xi, yi, name in zip(x, rows["mean"].to_numpy(), rows["system"].to_list(), strict=True):
            mine = name == default
            ax.scatter(xi, yi, marker="*" if mine else "o", s=160 if mine else 40,
                       color="tab:red" if mine else "tab:blue", zorder=3)  # fmt: skip
            ax.annotate(name, (xi, yi), fontsize=7, xytext=(4, 3), textcoords="offset points")
        if cpu:
            ax.set_xscale("symlog", linthresh=1.0)  # log above 1 s, linear to 0 (BM25 alone)
        ax.set(
            title=data,
            xlabel="CPU-seconds embedding" if cpu else "tokens embedded per token of text",
            ylabel=f"mean {metric}",
        )
        ax.grid(alpha=0.3)
    fig.suptitle(f"{metric} against embedding cost (star: {default})")
    fig.tight_layout()
    return fig
