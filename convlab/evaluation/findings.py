"""The README's findings table: per data set, its headline system against BM25, held out.

One row per regression with a ``headline`` (:class:`convlab.evaluation.regressions.Headline`):
the system's mean and the baseline's on the same queries, the paired difference with its 95%
percentile bootstrap interval (:func:`convlab.evaluation.significance.bootstrap_ci` of the
per-query differences), and the paired randomization test's p (Fisher; Smucker, Allan and
Carterette, CIKM 2007), Holm-adjusted over the table's rows (Holm 1979). The smallest p a
randomization test can give is ``1 / (permutations + 1)``; the table's Holm floor is that times
the number of rows, stated under the table, so a p at its floor reads as "at most".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from convlab.evaluation.regressions import Headline, Regression, in_tier, paired_values
from convlab.evaluation.significance import bootstrap_ci, holm, paired_randomization

__all__ = ["BEGIN", "END", "Row", "Verdict", "render", "row", "table", "with_table"]

BEGIN = "<!-- findings table: made by python -m eval.reproduce, never edited by hand -->"
END = "<!-- end of findings table -->"

Verdict = str
"""``better``, ``worse`` (a regression) or ``no difference``, at Holm p < 0.05."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One data set's headline comparison (``p`` before Holm's adjustment)."""

    data: str
    page: str | None
    headline: Headline
    mean: float
    baseline_mean: float
    delta: float
    ci_low: float
    ci_high: float
    p: float
    queries: int


def row(run: Path, headline: Headline, *, data: str, page: str | None, permutations: int) -> Row:
    """The headline comparison of the run folder ``run``."""
    a, b = paired_values(run, headline)
    d = a - b
    low, high = bootstrap_ci(d)
    p = paired_randomization(a, b, permutations=permutations)
    return Row(
        data=data,
        page=page,
        headline=headline,
        mean=float(a.mean()),
        baseline_mean=float(b.mean()),
        delta=float(d.mean()),
        ci_low=low,
        ci_high=high,
        p=p,
        queries=len(d),
    )


def _metric(h: Headline) -> str:
    if h.level is None:
        return h.metric
    return f"{h.metric} ({h.level}, {h.average or 'strict'}; official)"


def render(
    rows: list[Row],
    *,
    permutations: int,
    command: str,
    commit: str,
    seconds: float,
    full: tuple[float, list[str]],
    alpha: float = 0.05,
) -> str:
    """The table between its markers, with the command, commit and times under it.

    ``seconds`` is the tier's measured time (the sum of its regressions' last cold times,
    ``seconds`` in their files); ``full`` the same for the full tier, with the regressions whose
    time was never measured.
    """
    adjusted = holm([r.p for r in rows])
    lines = [
        BEGIN,
        "",
        "| data | metric | system | BM25 | difference [95% interval] | Holm p | finding |",
        "|---|---|---|---|---|---|---|",
    ]
    for r, p in zip(rows, adjusted, strict=True):
        verdict = "no difference"
        if p < alpha:
            verdict = "better" if r.delta > 0 else "**worse (a regression)**"
        data = f"[{r.data}]({r.page})" if r.page else r.data
        lines.append(
            f"| {data} ({r.queries} queries) | {_metric(r.headline)} "
            f"| `{r.headline.system}` {r.mean:.3f} | `{r.headline.baseline}` {r.baseline_mean:.3f} "
            f"| {r.delta:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}] | {p:.4f} | {verdict} |"
        )
    floor = len(rows) / (permutations + 1)
    total, unmeasured = full
    tail = f"The full tier's regressions measured so far took {total / 60:.0f} minutes"
    tail += f"; not yet measured: {', '.join(unmeasured)}." if unmeasured else "."
    lines += [
        "",
        f"Paired randomization with {permutations:,} permutations, Holm over the {len(rows)} "
        f"rows: no p can be below {floor:.5f}. Made by `{command}` from runs made at commit "
        f"`{commit}`; "
        f"the tier's runs took {seconds / 60:.0f} minutes, measured from a cold cache on two "
        f"cores. {tail}",
        "",
        END,
    ]
    return "\n".join(lines)


def table(
    heads: list[tuple[Regression, Path]],
    every: list[Regression],
    tier: str,
    *,
    command: str,
    permutations: int,
) -> str:
    """The findings table of ``tier`` from its headline runs (regression, run folder).

    The commit is the one the runs record (``config.json``), which a rerun of the table from
    kept runs did not make; the times are the regressions' recorded ones (``every``: the whole
    registry, for the full tier's).
    """
    rows = []
    for reg, run in heads:
        if reg.headline is None:
            raise ValueError(f"{reg.source}: no headline")
        page = f"docs/site_src/results/{reg.name}.md" if reg.page else None
        rows.append(row(run, reg.headline, data=reg.title, page=page, permutations=permutations))
    made = {json.loads((run / "config.json").read_text())["commit"] for _, run in heads}
    return render(
        rows,
        permutations=permutations,
        command=command,
        commit=", ".join(sorted(str(c) for c in made)),
        seconds=sum(r.seconds or 0.0 for r in every if in_tier(r, tier)),
        full=(sum(r.seconds or 0.0 for r in every), [r.name for r in every if r.seconds is None]),
    )


def with_table(readme: str, block: str) -> str:
    """``readme`` with the text between the findings table's markers replaced by ``block``.

    Raises:
        ValueError: the markers are missing or out of order.
    """
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the README has no findings table markers ({BEGIN!r} ... {END!r})")
    return readme[:start] + block + readme[end + len(END) :]
