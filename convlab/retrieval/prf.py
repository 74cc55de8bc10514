"""Pseudo-relevance feedback: RM3 query expansion for BM25 (Lavrenko & Croft, 2001).

The query is searched once; its ``fb_docs`` best units are taken as relevant; the relevance
model over their terms is

``P(t|R) = sum_d P(t|d) * P(d|q)``, with ``P(t|d) = tf(t, d) / |d|`` and ``P(d|q)`` the doc's
first-pass BM25 score divided by the sum over the feedback docs' scores;

its ``fb_terms`` heaviest terms are kept and renormalised to sum 1 (RM1), and interpolated with
the original query, itself the query's term counts normalised to sum 1 (RM3):

``w(t) = original_weight * q(t) + (1 - original_weight) * P(t|R)``.

The second pass scores each unit by ``sum_t w(t) * bm25(t, d)``
(:meth:`convlab.index.bm25.BM25Index.weighted_scores`). Terms are the index's own tokens
(stemmed, stopwords out), so the feedback docs are tokenised exactly as the index was. The
starting values 10 docs, 10 terms, 0.5 are Anserini's RM3 defaults.

Example:
    >>> expand(["cat"], [["cat", "dog"]], [2.0], PRF(fb_docs=1, fb_terms=2))
    {'cat': 0.75, 'dog': 0.25}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, ClassVar

from msgspec import Meta

from convlab.config import check

__all__ = ["PRF", "expand", "relevance_model"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PRF:
    """RM3 pseudo-relevance feedback for the lexical (BM25) views: ``prf = {...}`` in the options.

    Attributes:
        fb_docs: first-pass units taken as relevant (1 to 1,000).
        fb_terms: expansion terms kept from the relevance model (1 to 1,000).
        original_weight: the original query's share of the expanded query, in [0, 1].

    Raises:
        ValueError: a value out of its range.
    """

    KEY: ClassVar[str] = "prf"
    FORM: ClassVar[str] = "table"

    fb_docs: Annotated[int, Meta(ge=1, le=1000)] = 10
    fb_terms: Annotated[int, Meta(ge=1, le=1000)] = 10
    original_weight: Annotated[float, Meta(ge=0.0, le=1.0)] = 0.5

    def __post_init__(self) -> None:
        check(self, "prf")


def relevance_model(
    docs: Sequence[Sequence[str]], scores: Sequence[float], fb_terms: int
) -> dict[str, float]:
    """RM1: the ``fb_terms`` heaviest ``P(t|R)`` over the feedback ``docs``, summing to 1.

    Args:
        docs: each feedback doc's terms (the index's tokens).
        scores: each doc's first-pass score (positive), normalised here to ``P(d|q)``.
        fb_terms: terms kept; ties go to the term seen first.
    """
    total = float(sum(scores))
    weights: dict[str, float] = {}
    for terms, score in zip(docs, scores, strict=True):
        if not terms or total <= 0:
            continue
        p_d = score / total
        for term, tf in Counter(terms).items():
            weights[term] = weights.get(term, 0.0) + tf / len(terms) * p_d
    kept = sorted(weights.items(), key=lambda kv: -kv[1])[:fb_terms]  # stable: first seen wins
    mass = sum(w for _, w in kept)
    return {t: w / mass for t, w in kept} if mass > 0 else {}


def expand(
    query: Sequence[str], docs: Sequence[Sequence[str]], scores: Sequence[float], prf: PRF
) -> dict[str, float]:
    """RM3: the query's normalised term counts interpolated with :func:`relevance_model`."""
    counts = Counter(query)
    n = sum(counts.values())
    rm = relevance_model(docs, scores, prf.fb_terms)
    alpha = prf.original_weight
    out = {t: alpha * c / n for t, c in counts.items()} if n else {}
    for term, w in rm.items():
        out[term] = out.get(term, 0.0) + (1.0 - alpha) * w
    return out
