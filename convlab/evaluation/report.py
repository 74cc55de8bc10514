"""The Markdown report of an evaluation run (``report.md`` of a run folder).

Every piece of text that came from the user or the data (system names, categories, the data's
name) is written escaped (:func:`convlab.systems.names.markdown`): a name cannot break a
table, make a link or an HTML tag, or put a control byte into the file.

Headline table with significance marks, per-category tables, LongMemEval's measures when run,
resurrection by budget, the system x policy grid with its significance marks and efficiency test
(when several policies ran), significance against the baseline, units per strategy (per message,
distinct texts, tokens embedded, and what the embedding pass took) and the figures saved beside
it by :func:`convlab.evaluation.runfolder.save_run`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from convlab.atomic import write_text_atomic
from convlab.evaluation.config import LONGMEMEVAL_METRICS, PROTOCOLS
from convlab.evaluation.lme_bm25 import REFERENCE
from convlab.evaluation.policy_grid import EFFICIENCY, TESTED, grid_means
from convlab.evaluation.result import Evaluation, mark_significant
from convlab.pipeline.unit_costs import UNIT_COSTS
from convlab.systems.names import markdown, markdown_code

__all__ = ["markdown_table", "policy_grid_lines", "units_lines", "write_report"]


def _fmt(v: object) -> str:
    """A cell: floats to three decimals, ``None`` empty, text escaped."""
    if isinstance(v, float):
        return f"{v:.3f}"
    return "" if v is None else markdown(v)


def markdown_table(df: pl.DataFrame) -> str:
    """``df`` as a GitHub Markdown table.

    Example:
        >>> print(markdown_table(pl.DataFrame({"system": ["a"], "recall@5": [0.5]})))
        | system | recall@5 |
        |---|---|
        | a | 0.500 |
    """
    cols = df.columns
    lines = ["| " + " | ".join(markdown(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for row in df.iter_rows():
        lines.append("| " + " | ".join(_fmt(v) for v in row) + " |")
    return "\n".join(lines)


def _longmemeval_section(ev: Evaluation) -> list[str]:
    """LongMemEval's measures (success = recall_any, recall_all, nDCG at 1, 5, 10), when run."""
    measured = set(ev.summary["metric"])
    metrics = tuple(m for m in LONGMEMEVAL_METRICS if m in measured)
    if not metrics:
        return []
    lines = []
    for level, title in (("", "turn"), ("session:", "session")):
        names = tuple(m for m in metrics if m.startswith(level) and (level or ":" not in m))
        if names:
            lines += [
                f"## LongMemEval measures, {title} level",
                "",
                "success = LongMemEval's recall_any; session level collapses each ranking of "
                "turns to its sessions (first occurrence).",
                "",
                markdown_table(ev.table(names)),
                "",
            ]
    return lines


def _protocol_lines(ev: Evaluation) -> list[str]:
    """The protocol the run was judged by (the report's first lines)."""
    name = ev.config["config"].get("protocol", "convlab")
    lines = [f"**Protocol: {markdown_code(name)}**, {PROTOCOLS[name]}."]
    if name == "convlab" and ev.config["data"].get("haystacks"):
        lines.append(
            "These are not LongMemEval's official figures (its keys are user messages "
            "only): `--protocol longmemeval` gives those."
        )
    if name == "longmemeval":
        lines.append(
            "Each system's ranking is completed with the haystack's keys it did not return, "
            "in haystack order, before the official measures; its session level is the "
            "official turn -> session scoring (k widened to k distinct sessions). convlab's BM25 "
            "views keep convlab's BM25 (bm25s, IDF over the whole corpus of distinct sessions, "
            "not per haystack); the official flat BM25 (rank_bm25 per haystack) is the row "
            f"{markdown_code(REFERENCE)}. The tables below the official ones are convlab's "
            "measures on the same keys and gold."
        )
    return [*lines, ""]


# the README's reference table: LongMemEval's own columns
_OFFICIAL_COLUMNS = (
    "recall_all@5",
    "ndcg_any@5",
    "recall_all@10",
    "ndcg_any@10",
    "recall_any@5",
    "recall_any@10",
)


def _official_section(ev: Evaluation) -> list[str]:
    """LongMemEval's official measures per level and average, marked against the baseline."""
    if ev.official is None:
        return []
    summary, sig = ev.official.summary, ev.official.significance
    lines = [
        "## LongMemEval's official measures",
        "",
        "`*`: differs from the baseline inside the average (paired randomization test, "
        "Holm-corrected over the systems, p < 0.05). Every k of 1, 3, 5, 10, 30, 50 is in "
        "`official_summary.parquet`; per question in `official_per_query.parquet`. The session "
        "level scores the ranking of turns (the official code at turn granularity); the session "
        "keys level ranks whole sessions, one key each, as LongMemEval's published session "
        "figures do (a system's sessions in the order of their best turn; the reference is "
        "flat BM25 over the session keys).",
        "",
    ]
    levels = (
        ("turn", "turn level"),
        ("session", "session level (from turns)"),
        ("session_keys", "session keys (official session granularity)"),
    )
    for level, title in levels:
        for average, label in (("strict", "strict"), ("non_abstention", "non-abstention")):
            part = summary.filter((pl.col("level") == level) & (pl.col("average") == average))
            if not part.height:
                continue
            n = part.select(pl.col("queries").max()).item()
            wide = part.pivot(on="metric", index="system", values="mean")
            order = {s: i for i, s in enumerate([*ev.systems, REFERENCE])}
            wide = wide.sort(pl.col("system").replace_strict(order, default=len(order)))
            tests = sig.filter((pl.col("level") == level) & (pl.col("average") == average))
            marked = mark_significant(wide, tests, _OFFICIAL_COLUMNS, ["system"])
            lines += [
                f"### {title}, {label} (n = {n})",
                "",
                markdown_table(marked.select("system", *_OFFICIAL_COLUMNS)),
                "",
            ]
    return lines


def _tuned_note(ev: Evaluation) -> list[str]:
    """Which figures are cross-validated, and which systems had nothing tuned."""
    tuned = ev.config.get("tuned") or {}
    if not tuned:
        return ["Nothing was tuned: every system's settings were fixed before the run.", ""]
    cv = [f"{markdown_code(s)} ({t['folds']} folds)" for s, t in tuned.items() if t.get("cv")]
    fixed = [markdown_code(s) for s, t in tuned.items() if not t.get("cv")]
    lines = []
    if cv:
        lines.append(
            "**Cross-validated:** "
            + ", ".join(cv)
            + ": weights chosen on the training groups of each fold (`convlab.evaluation.folds`: "
            "a query's conversation, conversations one query spans joined; each question alone "
            "where each has its own haystack; `groups.parquet`), every figure "
            "from the held-out ones (`tuning.parquet`: each fold's choice; "
            "`systems.chosen.toml`: the choice on all queries, fixed, for other data). "
            "Every other system had nothing tuned."
        )
    if fixed:
        lines.append(
            "**Not cross-validated** (too few conversations to make folds; the system's "
            "fixed weights were used): " + ", ".join(fixed) + "."
        )
    return [*lines, ""]


def _judged_note(ev: Evaluation) -> list[str]:
    """What judged@10 and bpref mean, when the labels are pooled judgments."""
    if "judged@10" not in ev.headline_metrics:
        return []
    return [
        "Labels are pooled judgments: `judged@10` is the share of a system's top 10 that was "
        "judged at all; a system low on it found docs nobody judged (unmeasured, not wrong). "
        "`bpref` ignores unjudged docs (Buckley & Voorhees, 2004).",
        "",
    ]


def write_report(ev: Evaluation, out: Path) -> Path:
    """Write ``out/report.md`` (whole or not at all) and return its path."""
    cfg = ev.config
    data = cfg["data"]
    parts = [
        f"# Strategy comparison on {markdown(data['name'])}",
        "",
        *_protocol_lines(ev),
        f"{data['conversations']} conversations, {data['queries']} queries "
        f"({data['judged_queries']} with relevant docs), scope: {cfg['config']['scope']}, "
        f"model {markdown_code(cfg['model_id'])}, baseline {markdown_code(cfg['baseline'])}, "
        f"{cfg['seconds']} s.",
        f"Data fingerprint `{data['fingerprint'][:16]}`; "
        f"label cleaning: {markdown(data['cleaning'] or 'none')}.",
        "",
        "## Headline",
        "",
        "`*`: differs from the baseline (paired randomization test, Holm-corrected, p < 0.05).",
        "",
        markdown_table(ev.headline()),
        "",
        *_tuned_note(ev),
        *_judged_note(ev),
        *_official_section(ev),
        *_longmemeval_section(ev),
        "## Per category",
        "",
        "`*`: differs from the baseline inside the category (same test, Holm over systems).",
        "",
        markdown_table(ev.category_headline()),
        "",
        "## Recall@5 by category",
        "",
        markdown_table(
            ev.by_category.filter(pl.col("metric") == "recall@5").pivot(
                on="category", index="system", values="mean"
            )
        ),
        "",
        "## Resurrection by budget (mean over queries)",
        "",
        markdown_table(
            ev.budgets.group_by("system", "budget")
            .agg(
                pl.col("coverage").mean(),
                pl.col("evidence_token_recall").mean(),
                pl.col("answer_contained").mean(),
                pl.col("tokens_used").mean(),
                pl.col("redundancy").mean(),
            )
            .sort("system", "budget")
        ),
        "",
        *_policy_section(ev),
        "## Significance against the baseline",
        "",
        markdown_table(
            ev.significance.filter(pl.col("metric").is_in(["recall@5", "ndcg@10"])).select(
                "system",
                "metric",
                "mean",
                "ci_low",
                "ci_high",
                "delta",
                "p_randomization",
                "p_wilcoxon",
                "p_holm",
                "significant",
            )
        ),
        "",
        *units_lines(cfg),
        "![recall@k](recall_at_k.png) ![coverage](coverage_by_budget.png)",
        "![by category](recall_by_category.png) ![unit lengths](unit_lengths.png)",
        "",
    ]
    path = out / "report.md"
    write_text_atomic(path, "\n".join(parts))
    return path


def units_lines(cfg: dict[str, Any]) -> list[str]:
    """Units per strategy; with a run's ``unit_costs``, per message and what embedding took."""
    head = ["## Units per strategy", ""]
    costs = cfg.get("unit_costs")
    if not costs:  # a run recorded before its costs were
        units = cfg["units"]
        table = pl.DataFrame({"strategy": list(units), "units": list(units.values())})
        return [*head, markdown_table(table), ""]
    lines = [
        *head,
        "Units per message: per message with text. Distinct texts: each is embedded once. "
        "Tokens embedded: the tokens of the distinct texts, [CLS] and [SEP] included (0 for a "
        "strategy searched by BM25 alone); `all`: every embedded strategy's texts together, "
        "what the build embeds.",
        "",
        markdown_table(pl.DataFrame(costs, schema=UNIT_COSTS)),
        "",
    ]
    e = cfg.get("embedding") or {}
    if "embedded" in e:
        rate = ""
        if e["seconds"] and e["embedded"]:  # a pass served from the cache has no rate
            rate = f", {e['embedded'] / e['seconds']:.0f} texts/s"
        lines += [
            f"Embedding: {e['distinct']} distinct texts, {e['from_cache']} from the cache, "
            f"{e['embedded']} embedded in "
            f"{e['seconds']} s{rate}. One pass embeds every strategy's texts together, so "
            "its time is not split per strategy; tokens embedded tell each one's share of it.",
            "",
        ]
    return lines


def _policy_section(ev: Evaluation) -> list[str]:
    """The system x policy grid, when several policies were compared."""
    if not ev.policy_budgets.height:
        return []
    return policy_grid_lines(ev.policy_budgets, ev.policy_significance, image="policy_grid.png")


def policy_grid_lines(
    policy_budgets: pl.DataFrame, significance: pl.DataFrame, *, image: str | None = None
) -> list[str]:
    """The grid's Markdown: means marked ``*`` against the reference cell, the efficiency test.

    Args:
        policy_budgets: the per-query grid (:attr:`Evaluation.policy_budgets`).
        significance: :func:`convlab.evaluation.policy_grid.grid_significance` of it.
        image: the plot's file name beside the Markdown, linked when given.
    """
    means = grid_means(policy_budgets).with_columns(pl.col("tokens_used").round(0).cast(pl.Int64))
    means = means.select("system", "policy", "budget", *[c for c in means.columns[3:]])
    grid_tests = significance.filter(pl.col("test") == "grid") if significance.height else None
    lines = ["## Resurrection policies at equal budgets: the system x policy grid", ""]
    if grid_tests is not None and grid_tests.height:
        ref = grid_tests.row(0, named=True)
        cell = (
            f"{markdown_code(ref['reference_system'])} + {markdown_code(ref['reference_policy'])}"
        )
        lines += [
            f"Means over queries. `*`: differs from {cell} at the same budget (paired "
            "randomization test, Holm-corrected over the whole grid of the measure, p < 0.05); "
            "tested: " + ", ".join(TESTED) + ".",
            "",
        ]
        means = mark_significant(
            means, grid_tests, TESTED, ["system", "policy", "budget"]
        ).with_columns(
            pl.when(
                (pl.col("system") == ref["reference_system"])
                & (pl.col("policy") == ref["reference_policy"])
            )
            .then(pl.col("coverage") + " (ref)")
            .otherwise(pl.col("coverage"))
            .alias("coverage")
        )
    else:
        lines += ["Means over queries (no significance tests were run).", ""]
    lines += [markdown_table(means), "", *_efficiency_lines(significance)]
    if image:
        lines += [f"![answer containment and coverage against tokens used]({image})", ""]
    return lines


def _efficiency_lines(significance: pl.DataFrame) -> list[str]:
    """The efficiency question in words, from the ``efficiency`` rows of the grid's tests."""
    budget, (ref_system, ref_policy), ref_budget = EFFICIENCY
    rows = (
        {
            r["metric"]: r
            for r in significance.filter(pl.col("test") == "efficiency").iter_rows(named=True)
        }
        if significance.height
        else {}
    )
    if "coverage" not in rows:
        return [
            f"Efficiency test not run: the grid needs the budgets {budget} and {ref_budget} and "
            f"the cell `{ref_system}` + `{ref_policy}`.",
            "",
        ]
    c = rows["coverage"]
    out = [
        f"Efficiency: the best cell at {budget} tokens by coverage, "
        f"{markdown_code(c['system'])} + {markdown_code(c['policy'])}, against "
        f"{markdown_code(ref_system)} + {markdown_code(ref_policy)} at "
        f"{ref_budget}, paired over the same queries (randomization test, one pre-stated "
        "comparison; the best cell is picked on these queries, which favours it):",
        "",
        f"| measure | queries | best@{budget} | reference@{ref_budget} | delta | delta 95% CI "
        "| p |",
        "|---|---|---|---|---|---|---|",
    ]
    for m, r in rows.items():
        out.append(
            f"| {m} | {r['queries']} | {r['mean']:.3f} | {r['reference_mean']:.3f} "
            f"| {r['delta']:+.3f} | [{r['delta_ci_low']:+.3f}, {r['delta_ci_high']:+.3f}] "
            f"| {r['p_randomization']:.4f}{'*' if r['significant'] else ''} |"
        )
    return [*out, ""]
