"""Resurrection: bring back what was embedded together, within a token budget (seeds/003).

Walk the hits in rank order; for each, bring back the chunks of its unit (``units.chunk_ids``:
the target and the context it was embedded with -- never recomputed); count only the tokens of
chunks not already in the context; a hit whose new tokens do not fit is skipped, and the walk
goes on while smaller ones fit. The context comes back in conversation order.

Evaluation measures per budget (:func:`budget_measures`):

- **coverage**: share of a query's relevant docs fully brought back (every chunk of the doc --
  of the turn in chats, of the message in dialogs -- is in the context);
- **tokens used**;
- **answer containment**: the normalised reference answer (lower-cased, punctuation and articles
  removed, whitespace folded: SQuAD's normalisation) is found in the normalised context;
- **redundancy**: share of the tokens of the brought-back units that were already in context
  when the hit came (a system that retrieves overlapping units wastes its budget and shows it here).
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from convlab import schema

__all__ = ["Resurrection", "budget_measures", "normalize_answer", "resurrect"]


@dataclass(frozen=True, slots=True)
class Resurrection:
    """The resurrected context and its accounting."""

    context: pl.DataFrame  # schema.CONTEXT, in conversation order
    budget: int
    tokens_used: int
    hits_used: list[int]  # ranks brought back (wholly or already alive)
    hits_skipped: list[int]  # ranks that did not fit
    tokens_offered: int  # tokens of the units brought back, counting chunks already alive

    @property
    def redundancy(self) -> float:
        """Share of the brought-back units' tokens that were already in context."""
        if self.tokens_offered == 0:
            return 0.0
        return 1.0 - self.tokens_used / self.tokens_offered


def resurrect(
    hits: pl.DataFrame, budget: int, *, units: pl.DataFrame, sentences: pl.DataFrame
) -> Resurrection:
    """Resurrect the chunks of ranked hits into a context of at most ``budget`` tokens.

    Args:
        hits: ranked hits of one query (``rank``, ``unit_id``).
        budget: the token budget (chunk tokens, as counted in ``sentences.n_tokens``).
        units: the units the hits point to (``unit_id``, ``chunk_ids``, ``target_chunk_id``).
        sentences: the chunks (``chunk_id``, ``n_tokens``, ``text``, ...).

    Example:
        seeds/003's example 3: the user S0 (120) is alive, the assistant S0 (80) and the target
        (150) are not, so the hit costs 230 tokens.
    """
    if budget < 0:
        raise ValueError("budget must not be negative")
    chunk_ids = dict(units.select("unit_id", "chunk_ids").iter_rows())
    targets = dict(units.select("unit_id", "target_chunk_id").iter_rows())
    wanted = {c for u in hits["unit_id"].to_list() for c in chunk_ids.get(u, [])}
    sent = sentences.filter(pl.col("chunk_id").is_in(sorted(wanted)))
    tokens = dict(sent.select("chunk_id", "n_tokens").iter_rows())
    alive: dict[str, int] = {}
    target_set: set[str] = set()
    used = offered = 0
    hits_used: list[int] = []
    skipped: list[int] = []
    for rank, unit in hits.sort("rank").select("rank", "unit_id").iter_rows():
        ids = chunk_ids.get(unit)
        if ids is None:
            raise ValueError(f"hit {rank} points to unit {unit!r}, which is not in units")
        cost = sum(tokens[c] for c in ids if c not in alive)
        if used + cost > budget:
            skipped.append(rank)
            continue
        offered += sum(tokens[c] for c in ids)
        for c in ids:
            alive.setdefault(c, rank)
        used += cost
        hits_used.append(rank)
        if targets.get(unit):
            target_set.add(targets[unit])
        else:  # a window: every chunk stands for the unit
            target_set.update(ids)
    if alive:
        ctx = sent.filter(pl.col("chunk_id").is_in(list(alive))).with_columns(
            pl.col("chunk_id").replace_strict(alive, return_dtype=pl.Int32).alias("hit_rank"),
            pl.col("chunk_id").is_in(sorted(target_set)).alias("is_target"),
        )
        ctx = ctx.sort("conversation_id", "position").select(list(schema.CONTEXT))
    else:
        ctx = schema.empty(schema.CONTEXT)
    return Resurrection(ctx, budget, used, hits_used, skipped, offered)


def _walk(
    ranked_units: Sequence[str],
    budget: int,
    chunk_ids: dict[str, list[str]],
    tokens: dict[str, int],
) -> tuple[set[str], int, int, int, int]:
    """The walk of :func:`resurrect` on plain dicts: (chunks, used, offered, used, skipped)."""
    alive: set[str] = set()
    used = offered = n_used = n_skipped = 0
    for unit in ranked_units:
        ids = chunk_ids[unit]
        cost = sum(tokens[c] for c in ids if c not in alive)
        if used + cost > budget:
            n_skipped += 1
            continue
        offered += sum(tokens[c] for c in ids)
        alive.update(ids)
        used += cost
        n_used += 1
    return alive, used, offered, n_used, n_skipped


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    t = _ARTICLES.sub(" ", str(text).lower().translate(_PUNCT))
    return " ".join(t.split())


def budget_measures(
    hits: pl.DataFrame,
    queries: pl.DataFrame,
    *,
    units: pl.DataFrame,
    sentences: pl.DataFrame,
    budgets: Sequence[int],
    dialog_docs: bool,
) -> pl.DataFrame:
    """Per query and budget: coverage, tokens used, answer containment, redundancy.

    Args:
        hits: ranked hits (``query_id``, ``rank``, ``unit_id``).
        queries: labelled queries (``relevant``, ``answer``).
        units: the units hits point to.
        sentences: the chunks.
        budgets: token budgets.
        dialog_docs: docs are messages (dialogs) rather than turns.
    """
    doc_col = (
        pl.concat_str(
            [pl.col("conversation_id"), pl.lit(":m"), pl.col("message_index").cast(pl.String)]
        )
        if dialog_docs
        else pl.concat_str(
            [pl.col("conversation_id"), pl.lit(":t"), pl.col("turn_index").cast(pl.String)]
        )
    )
    doc_chunks: dict[str, set[str]] = {}
    for doc, cid in sentences.select(doc_col.alias("doc"), "chunk_id").iter_rows():
        doc_chunks.setdefault(doc, set()).add(cid)
    chunk_ids = dict(units.select("unit_id", "chunk_ids").iter_rows())
    tokens = dict(sentences.select("chunk_id", "n_tokens").iter_rows())
    texts = dict(sentences.select("chunk_id", "text").iter_rows())
    by_query = {
        q: part.sort("rank")["unit_id"].to_list() for (q,), part in hits.group_by("query_id")
    }
    rows = []
    for q, relevant, answer in queries.select("query_id", "relevant", "answer").iter_rows():
        ranked = by_query.get(q, [])
        for b in budgets:
            got, used, offered, n_used, n_skipped = _walk(ranked, b, chunk_ids, tokens)
            cov = (
                sum(1 for d in relevant if doc_chunks.get(d) and doc_chunks[d] <= got)
                / len(relevant)
                if relevant
                else None
            )
            contained = None
            if answer is not None and normalize_answer(answer):
                text = normalize_answer(" ".join(texts[c] for c in got))
                contained = float(normalize_answer(answer) in text)
            rows.append(
                {
                    "query_id": q,
                    "budget": b,
                    "coverage": cov,
                    "tokens_used": used,
                    "answer_contained": contained,
                    "redundancy": 0.0 if offered == 0 else 1.0 - used / offered,
                    "hits_used": n_used,
                    "hits_skipped": n_skipped,
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "query_id": pl.String,
            "budget": pl.Int32,
            "coverage": pl.Float64,
            "tokens_used": pl.Int32,
            "answer_contained": pl.Float64,
            "redundancy": pl.Float64,
            "hits_used": pl.Int32,
            "hits_skipped": pl.Int32,
        },
    )
