"""Resurrection: bring back what was embedded together, within a token budget (seeds/003).

Walk the ranked units (a search's hits, best first); for each, bring back the chunks of its unit
(``units.chunk_ids``: the target and the context it was embedded with -- never recomputed);
count only the tokens of chunks not already in the context; a unit whose new tokens do not fit
is skipped, and the walk goes on while smaller ones fit. The context comes back in conversation
order.

Evaluation measures per budget (:func:`budget_measures`):

- **coverage**: share of a query's relevant docs fully brought back (every chunk of the doc --
  of the turn in chats, of the message in dialogs -- is in the context);
- **evidence token recall**: share of the relevant docs' tokens that are in the context (the
  partial credit that strict coverage does not give: half of a long turn counts half);
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


@dataclass(frozen=True, slots=True)
class _Walk:
    """What one walk over ranked hits brought back."""

    alive: dict[str, int]  # chunk id -> rank of the hit that brought it back, in walk order
    used: int
    offered: int
    hits_used: list[int]
    hits_skipped: list[int]


def _walk(
    ranked: Sequence[tuple[int, str]],
    budget: int,
    chunk_ids: dict[str, list[str]],
    tokens: dict[str, int],
) -> _Walk:
    """The one walk behind :func:`resurrect` and :func:`budget_measures`.

    ``ranked`` is (rank, unit id) in rank order. A hit costs the tokens of its chunks not yet
    alive; one that does not fit is skipped and the walk goes on.
    """
    alive: dict[str, int] = {}
    used = offered = 0
    hits_used: list[int] = []
    skipped: list[int] = []
    for rank, unit in ranked:
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
    return _Walk(alive, used, offered, hits_used, skipped)


def resurrect(
    unit_ids: Sequence[str] | pl.Series,
    budget: int,
    *,
    units: pl.DataFrame,
    chunks: pl.DataFrame,
) -> Resurrection:
    """Resurrect the chunks of ranked units into a context of at most ``budget`` tokens.

    Args:
        unit_ids: the units to bring back, best first (a search's ``hits["unit_id"]``, or any
            units, e.g. every unit of a turn); the first has rank 1.
        budget: the token budget (chunk tokens, as counted in ``chunks.n_tokens``).
        units: the units the ids point to (``unit_id``, ``chunk_ids``, ``target_chunk_id``).
        chunks: the chunks (``chunk_id``, ``n_tokens``, ``text``, ...).

    Raises:
        ValueError: a negative budget, or a unit id not in ``units`` (naming its rank).

    Example:
        seeds/003's example 3: the user S0 (120) is alive, the assistant S0 (80) and the target
        (150) are not, so the unit costs 230 tokens:

        >>> resurrect(["u0", "s5"], 1000, units=units, sentences=chunks)  # doctest: +SKIP
    """
    if budget < 0:
        raise ValueError("budget must not be negative")
    ids = [str(u) for u in unit_ids]
    chunk_ids = dict(units.select("unit_id", "chunk_ids").iter_rows())
    targets = dict(units.select("unit_id", "target_chunk_id").iter_rows())
    wanted = {c for u in ids for c in chunk_ids.get(u, [])}
    sent = chunks.filter(pl.col("chunk_id").is_in(sorted(wanted)))
    tokens = dict(sent.select("chunk_id", "n_tokens").iter_rows())
    ranked = list(enumerate(ids, start=1))
    walk = _walk(ranked, budget, chunk_ids, tokens)
    target_set: set[str] = set()
    units_used = dict(ranked)
    for rank in walk.hits_used:
        unit = units_used[rank]
        if targets.get(unit):
            target_set.add(targets[unit])
        else:  # a window: every chunk stands for the unit
            target_set.update(chunk_ids[unit])
    if walk.alive:
        ctx = sent.filter(pl.col("chunk_id").is_in(list(walk.alive))).with_columns(
            pl.col("chunk_id").replace_strict(walk.alive, return_dtype=pl.Int32).alias("hit_rank"),
            pl.col("chunk_id").is_in(sorted(target_set)).alias("is_target"),
        )
        ctx = ctx.sort("conversation_id", "position").select(list(schema.CONTEXT))
    else:
        ctx = schema.empty(schema.CONTEXT)
    return Resurrection(ctx, budget, walk.used, walk.hits_used, walk.hits_skipped, walk.offered)


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
    chunks: pl.DataFrame,
    budgets: Sequence[int],
) -> pl.DataFrame:
    """Per query and budget: coverage, evidence token recall, tokens, containment, redundancy.

    Args:
        hits: ranked hits (``query_id``, ``rank``, ``unit_id``).
        queries: labelled queries (``relevant``, ``answer``).
        units: the units hits point to.
        chunks: the chunks; each one's doc (its turn or its message) follows its ``doc_kind``.
        budgets: token budgets.
    """
    doc_col = (
        pl.when(pl.col("doc_kind") == "message")
        .then(schema.message_id_expr())
        .otherwise(schema.turn_id_expr())
    )
    doc_chunks: dict[str, set[str]] = {}
    for doc, cid in chunks.select(doc_col.alias("doc"), "chunk_id").iter_rows():
        doc_chunks.setdefault(doc, set()).add(cid)
    chunk_ids = dict(units.select("unit_id", "chunk_ids").iter_rows())
    tokens = dict(chunks.select("chunk_id", "n_tokens").iter_rows())
    texts = dict(chunks.select("chunk_id", "text").iter_rows())
    # conversation order, so an answer that spans two adjacent chunks is found in the context
    order = {
        c: i for i, c in enumerate(chunks.sort("conversation_id", "position")["chunk_id"].to_list())
    }
    by_query = {
        q: list(part.sort("rank").select("rank", "unit_id").iter_rows())
        for (q,), part in hits.group_by("query_id")
    }
    rows = []
    for q, relevant, answer in queries.select("query_id", "relevant", "answer").iter_rows():
        ranked = by_query.get(q, [])
        evidence = [doc_chunks.get(d, set()) for d in relevant or []]
        evidence_tokens = sum(tokens[c] for doc in evidence for c in doc)
        for b in budgets:
            walk = _walk(ranked, b, chunk_ids, tokens)
            got = walk.alive
            cov = (
                sum(1 for doc in evidence if doc and doc <= got.keys()) / len(evidence)
                if evidence
                else None
            )
            recall = (
                sum(tokens[c] for doc in evidence for c in doc if c in got) / evidence_tokens
                if evidence_tokens
                else None
            )
            contained = None
            if answer is not None and normalize_answer(answer):
                text = normalize_answer(
                    " ".join(texts[c] for c in sorted(got, key=order.__getitem__))
                )
                contained = float(normalize_answer(answer) in text)
            rows.append(
                {
                    "query_id": q,
                    "budget": b,
                    "coverage": cov,
                    "evidence_token_recall": recall,
                    "tokens_used": walk.used,
                    "answer_contained": contained,
                    "redundancy": 0.0 if walk.offered == 0 else 1.0 - walk.used / walk.offered,
                    "hits_used": len(walk.hits_used),
                    "hits_skipped": len(walk.hits_skipped),
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "query_id": pl.String,
            "budget": pl.Int32,
            "coverage": pl.Float64,
            "evidence_token_recall": pl.Float64,
            "tokens_used": pl.Int32,
            "answer_contained": pl.Float64,
            "redundancy": pl.Float64,
            "hits_used": pl.Int32,
            "hits_skipped": pl.Int32,
        },
    )
