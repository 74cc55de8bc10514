"""Resurrection: bring back context for ranked hits, within a token budget, by a policy.

A **policy** (:class:`convlab.protocols.ResurrectionPolicy`, registered in :data:`POLICIES`) says
what one hit brings back, as an ordered list of *pieces* (lists of chunk ids): ``unit`` (what
was embedded together, so resurrection matches embedding), ``doc``, ``window``, ``pair``,
``unit+doc``.

**The budget walk** (one rule for every policy) goes over the hits best first. A piece costs
the tokens of its chunks not already in the context (a chunk brought back once costs nothing
again). A hit's first piece that does not fit the remaining budget skips the whole hit, and the
walk goes on with the next hit while smaller ones fit; a later piece of a hit that does not fit
is skipped alone, and the walk goes on with the hit's next piece. The context comes back in
conversation order.

Evaluation measures per budget (:func:`budget_measures`):

- **coverage**: share of a query's relevant docs fully brought back (every chunk of the doc --
  of the turn in chats, of the message in dialogs -- is in the context). Where the queries name
  the evidence messages inside a doc (an ``evidence`` column, :data:`convlab.schema.QUERY_EVIDENCE`:
  LongMemEval's ``has_answer`` messages, whose docs are turns), the doc counts as brought back
  when those messages are: the other half of the turn is not evidence, and without this a
  ``message`` unit could never cover an evidence turn (:func:`evidence_chunks`);
- **evidence token recall**: share of the relevant docs' (evidence's) tokens that are in the
  context (the partial credit that strict coverage does not give: half of a long turn counts half);
- **tokens used**;
- **answer containment**: the normalised reference answer (lower-cased, punctuation and articles
  removed, whitespace folded: SQuAD's normalisation) is found in the normalised context;
- **redundancy**: share of the tokens of the brought-back pieces that were already in context
  when the hit came (a system that retrieves overlapping units wastes its budget and shows it here).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from convlab import schema
from convlab.defaults import POLICY
from convlab.protocols import Layout, ResurrectionPolicy
from convlab.resurrection.policies import POLICIES, get_policy
from convlab.resurrection.shared import Shared, context_text

__all__ = [
    "POLICIES",
    "Resurrection",
    "budget_measures",
    "evidence_chunks",
    "get_policy",
    "normalize_answer",
    "resurrect",
    "walk",
]


@dataclass(frozen=True, slots=True)
class Resurrection:
    """The resurrected context and its accounting."""

    context: pl.DataFrame  # schema.CONTEXT, in conversation order
    budget: int
    tokens_used: int
    hits_used: list[int]  # ranks brought back (wholly or already alive)
    hits_skipped: list[int]  # ranks whose first piece did not fit
    tokens_offered: int  # tokens of the pieces brought back, counting chunks already alive
    policy: str = POLICY
    pieces_skipped: int = 0  # later pieces of used hits that did not fit (unit+doc)

    @property
    def redundancy(self) -> float:
        """Share of the brought-back pieces' tokens that were already in context."""
        if self.tokens_offered == 0:
            return 0.0
        return 1.0 - self.tokens_used / self.tokens_offered

    def to_pandas(self) -> Any:
        """The context (:data:`convlab.schema.CONTEXT`) as a pandas frame."""
        return self.context.to_pandas()

    def text(self) -> str:
        """The context as prompt-ready text: one block per message, with who, when and where.

        Each block starts with a header ``[conversation · turn · time · speaker · file:line]``
        followed by the message's chunks brought back; ``[…]`` marks a gap between blocks of
        one conversation. See :func:`convlab.resurrection.render.context_text`.
        """
        from convlab.resurrection.render import context_text

        return context_text(self.context)


@dataclass(frozen=True, slots=True)
class Walk:
    """What one budget walk over ranked hits brought back.

    Attributes:
        alive: chunk id -> rank of the hit that brought it back, in walk order.
        used: tokens of the context.
        offered: tokens of the pieces brought back, counting chunks already alive.
        hits_used: ranks whose first piece was brought back.
        hits_skipped: ranks whose first piece did not fit.
        pieces_skipped: later pieces of used hits that did not fit.
    """

    alive: dict[str, int]
    used: int
    offered: int
    hits_used: list[int]
    hits_skipped: list[int]
    pieces_skipped: int


def walk(
    ranked: Sequence[tuple[int, Sequence[Sequence[str]]]],
    budget: int,
    tokens: dict[str, int],
) -> Walk:
    """The one budget walk behind :func:`resurrect` and :func:`budget_measures`.

    Args:
        ranked: (rank, pieces) per hit, best first; a piece is a list of chunk ids.
        budget: the token budget.
        tokens: chunk id -> tokens.

    Example:
        The second hit's piece (30 new tokens) does not fit 100 - 80; the third, whose chunk
        is alive already, costs nothing:

        >>> w = walk([(1, [["a"]]), (2, [["b"]]), (3, [["a"]])], 100, {"a": 80, "b": 30})
        >>> w.used, w.hits_used, w.hits_skipped, w.offered
        (80, [1, 3], [2], 160)
    """
    return _walk([(rank, _prepare(pieces, tokens)) for rank, pieces in ranked], budget)


Piece = tuple[tuple[str, ...], tuple[int, ...], int]
"""A piece ready for the walk: its distinct chunk ids, their tokens, and their sum."""


def _prepare(pieces: Sequence[Sequence[str]], tokens: dict[str, int]) -> tuple[Piece, ...]:
    """The pieces of one hit with their chunk ids made distinct and their tokens looked up."""
    out = []
    for piece in pieces:
        ids = tuple(dict.fromkeys(piece))
        toks = tuple(tokens[c] for c in ids)
        out.append((ids, toks, sum(toks)))
    return tuple(out)


def _walk(ranked: Sequence[tuple[int, tuple[Piece, ...]]], budget: int) -> Walk:
    """:func:`walk` over prepared pieces (the work a query shares across its budgets done once).

    The same rule as :func:`walk`, in integers, so every figure is the same.
    """
    alive: dict[str, int] = {}
    keys = alive.keys()
    used = offered = pieces_skipped = 0
    hits_used: list[int] = []
    skipped: list[int] = []
    for rank, pieces in ranked:
        for i, (ids, toks, total) in enumerate(pieces):
            if len(ids) == 1:
                cost = 0 if ids[0] in alive else total
            elif keys.isdisjoint(ids):  # no chunk alive yet: the whole piece (a C-level test)
                cost = total
            else:
                cost = total - sum(t for c, t in zip(ids, toks, strict=True) if c in alive)
            if used + cost > budget:
                if i == 0:
                    skipped.append(rank)
                    break
                pieces_skipped += 1
                continue
            offered += total
            for c in ids:
                alive.setdefault(c, rank)
            used += cost
            if i == 0:
                hits_used.append(rank)
    return Walk(alive, used, offered, hits_used, skipped, pieces_skipped)


def _pieces_of(
    policy: ResurrectionPolicy, layout: Layout
) -> Callable[[int, str, str | None], list[list[str]]]:
    """``(rank, unit id, doc id) -> pieces``, memoised, checking the unit exists."""
    memo: dict[tuple[str, str | None], list[list[str]]] = {}

    def pieces(rank: int, unit: str, doc: str | None) -> list[list[str]]:
        key = (unit, doc)
        if key not in memo:
            if unit not in layout.unit_chunks:
                raise ValueError(f"hit {rank} points to unit {unit!r}, which is not in units")
            got = [list(p) for p in policy.pieces(unit, doc, layout)]
            for p in got:
                unknown = [c for c in p if c not in layout.tokens]
                if unknown:
                    raise ValueError(
                        f"hit {rank} (unit {unit!r}) brings back chunk {unknown[0]!r}, "
                        "which is not in chunks"
                    )
            memo[key] = got
        return memo[key]

    return pieces


def resurrect(
    unit_ids: Sequence[str] | pl.Series,
    budget: int,
    *,
    units: pl.DataFrame,
    chunks: pl.DataFrame,
    policy: str | ResurrectionPolicy = POLICY,
    doc_ids: Sequence[str | None] | pl.Series | None = None,
    messages: pl.DataFrame | None = None,
) -> Resurrection:
    """Resurrect context for ranked units into at most ``budget`` tokens.

    Args:
        unit_ids: the units to bring back, best first (a search's ``hits["unit_id"]``, or any
            units, e.g. every unit of a turn); the first has rank 1.
        budget: the token budget (chunk tokens, as counted in ``chunks.n_tokens``).
        units: the units the ids point to (``unit_id``, ``chunk_ids``, ``doc_ids``,
            ``target_chunk_id``).
        chunks: the chunks (``chunk_id``, ``n_tokens``, ``text``, ...).
        policy: a name or spec (:func:`get_policy`) in :data:`POLICIES`, or a policy object;
            ``"unit"`` by default.
        doc_ids: the doc each hit stands for, in the order of ``unit_ids`` (a search's
            ``hits["doc_id"]``): doc-based policies bring back that doc of a many-doc unit.
        messages: the messages (:data:`convlab.schema.MESSAGES`): the context then carries
            each chunk's ``speaker``, ``source_path`` and ``source_line``.

    Raises:
        ValueError: a negative budget, an unknown policy, a unit id not in ``units``
            (naming its rank), or ``doc_ids`` of another length than ``unit_ids``.

    Example:
        A ``turn_pair`` unit whose user S0 (120 tokens) is alive already, its assistant S0 (80)
        and target (150) not, costs 230 tokens:

        >>> resurrect(["u0", "s5"], 1000, units=units, chunks=chunks)  # doctest: +SKIP
    """
    if budget < 0:
        raise ValueError("budget must not be negative")
    pol = get_policy(policy)
    ids = [str(u) for u in unit_ids]
    docs = [
        None if d is None else str(d) for d in ([None] * len(ids) if doc_ids is None else doc_ids)
    ]
    if len(docs) != len(ids):
        raise ValueError(f"{len(docs)} doc_ids for {len(ids)} unit_ids")
    mine = units.filter(pl.col("unit_id").is_in(ids))
    convs = mine["conversation_id"].unique().to_list() if "conversation_id" in mine.columns else []
    # only the conversations of the hits: the widget calls this for one hit over a whole store
    sent = chunks.filter(pl.col("conversation_id").is_in(convs)) if convs else chunks
    if sent.height == 0 or any(c is None for c in convs):
        sent = chunks
    layout = Layout.of(mine, sent)
    pieces = _pieces_of(pol, layout)
    ranked = [(r, pieces(r, u, d)) for r, (u, d) in enumerate(zip(ids, docs, strict=True), 1)]
    w = walk(ranked, budget, layout.tokens)
    target_set: set[str] = set()
    for rank in w.hits_used:
        unit = ids[rank - 1]
        target = layout.unit_target.get(unit)
        if target:
            target_set.add(target)
        else:  # a window: every chunk stands for the unit
            target_set.update(layout.unit_chunks[unit])
    if w.alive:
        ctx = sent.filter(pl.col("chunk_id").is_in(list(w.alive))).with_columns(
            pl.col("chunk_id").replace_strict(w.alive, return_dtype=pl.Int32).alias("hit_rank"),
            pl.col("chunk_id").is_in(sorted(target_set)).alias("is_target"),
        )
        ctx = _with_sources(ctx.sort("conversation_id", "position"), messages)
    else:
        ctx = schema.empty(schema.CONTEXT)
    return Resurrection(
        ctx, budget, w.used, w.hits_used, w.hits_skipped, w.offered, pol.name, w.pieces_skipped
    )


_SOURCES = ("speaker", "source_path", "source_line")


def _with_sources(ctx: pl.DataFrame, messages: pl.DataFrame | None) -> pl.DataFrame:
    """``ctx`` with its messages' speaker and source (null without ``messages``), as CONTEXT."""
    if messages is not None and messages.height:
        keys = ["conversation_id", "message_index"]
        have = [c for c in _SOURCES if c in messages.columns]
        ctx = (
            ctx.drop([c for c in have if c in ctx.columns])
            .join(messages.select(*keys, *have).unique(keys, keep="first"), on=keys, how="left")
            .sort("conversation_id", "position")
        )
    return ctx.select(
        pl.col(c).cast(dtype) if c in ctx.columns else pl.lit(None, dtype=dtype).alias(c)
        for c, dtype in schema.CONTEXT.items()
    )


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    t = _ARTICLES.sub(" ", str(text).lower().translate(_PUNCT))
    return " ".join(t.split())


def evidence_chunks(
    relevant: Sequence[str], evidence: Sequence[str] | None, memo: Shared
) -> list[set[str]]:
    """Per relevant doc, the chunks that must be in the context for it to count as covered.

    A doc's chunks, or, when ``evidence`` names messages whose chunks lie in that doc, the
    chunks of those messages only. A doc without chunks gives an empty set (never covered).

    Example:
        A turn ``c:t0`` of a user message ``c:m0`` (chunk ``u``) and its reply ``c:m1`` (``a``),
        whose evidence is the user message: ``[{"u"}]``; without evidence: ``[{"u", "a"}]``.
    """
    by_doc: dict[str, set[str]] = {}
    doc_of = memo.layout.doc_of
    for m in evidence or []:
        for c in memo.message_chunks.get(m, ()):
            by_doc.setdefault(doc_of[c], set()).add(c)
    return [by_doc.get(d) or memo.doc_chunks.get(d, set()) for d in relevant]


def budget_measures(
    hits: pl.DataFrame,
    queries: pl.DataFrame,
    *,
    units: pl.DataFrame,
    chunks: pl.DataFrame,
    budgets: Sequence[int],
    policy: str | ResurrectionPolicy = POLICY,
    shared: Shared | None = None,
) -> pl.DataFrame:
    """Per query and budget: coverage, evidence token recall, tokens, containment, redundancy.

    Args:
        hits: ranked hits (``query_id``, ``rank``, ``unit_id``; ``doc_id`` when present tells
            doc-based policies which doc of a many-doc unit the hit stands for).
        queries: labelled queries (``relevant``, ``answer``; ``evidence`` when present:
            :func:`evidence_chunks`).
        units: the units hits point to.
        chunks: the chunks; each one's doc (its turn or its message) follows its ``doc_kind``.
        budgets: token budgets.
        policy: a name or spec (:func:`get_policy`) or a policy object; ``"unit"`` by default.
        shared: the look-ups of ``units`` over ``chunks`` (:meth:`Shared.of`), when the caller
            measures the same frames again (every system and policy of one strategy): made once
            there and passed here. None: made here for this call.

    Raises:
        ValueError: an unknown policy, or a hit whose unit is not in ``units``.
    """
    pol = get_policy(policy)
    memo = Shared.of(units, chunks) if shared is None else shared
    pieces = _pieces_of(pol, memo.layout)
    tokens = memo.layout.tokens
    prepared: dict[tuple[str, str | None], tuple[Piece, ...]] = {}
    by_query: dict[str, list[tuple[int, tuple[Piece, ...]]]] = {}
    docs = hits["doc_id"].to_list() if "doc_id" in hits.columns else [None] * hits.height
    for q, rank, unit, doc in zip(
        hits["query_id"].to_list(),
        hits["rank"].to_list(),
        hits["unit_id"].to_list(),
        docs,
        strict=True,
    ):
        key = (unit, doc)
        if key not in prepared:
            prepared[key] = _prepare(pieces(rank, unit, doc), tokens)
        by_query.setdefault(q, []).append((rank, prepared[key]))
    for ranked in by_query.values():
        ranked.sort(key=lambda r: r[0])
    rows = []
    named_col = pl.col("evidence") if "evidence" in queries.columns else pl.lit(None)
    for q, relevant, answer, named in queries.select(
        "query_id", "relevant", "answer", named_col
    ).iter_rows():
        ranked = by_query.get(q, [])
        evidence = evidence_chunks(relevant or [], named, memo)
        evidence_tokens = sum(tokens[c] for doc in evidence for c in doc)
        wanted = normalize_answer(answer) if answer is not None else ""
        for b in budgets:
            w = _walk(ranked, b)
            got = w.alive
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
            if wanted:
                contained = float(wanted in context_text(got, memo, normalize_answer))
            rows.append(
                {
                    "query_id": q,
                    "budget": b,
                    "coverage": cov,
                    "evidence_token_recall": recall,
                    "tokens_used": w.used,
                    "answer_contained": contained,
                    "redundancy": 0.0 if w.offered == 0 else 1.0 - w.used / w.offered,
                    "hits_used": len(w.hits_used),
                    "hits_skipped": len(w.hits_skipped),
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
