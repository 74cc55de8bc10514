"""How sure a search is that something matched: a per-query confidence from the system's scores.

A search always returns its best hits, even for a question whose answer is nowhere in the
history. The confidence is the probability, under a small logistic regression, that the query
has an answer in what was searched, read from the shape of its own ranked scores and from the
query's words found in the hits (:func:`hit_features`):

- ``top``: the score of the first hit (the default system's scores are weighted sums of
  per-view z-scores, so this is "how many standard deviations above the view's candidates");
- ``gap``: the first score minus the second;
- ``spread``: the first score as a z-score among the first :attr:`ConfidenceModel.hits` scores;
- ``matched_top``: the share of the query's terms found in the first hit's text;
- ``matched_any``: the share found in any of the first five hits' texts;
- ``terms``: ``log(1 + n)`` for the query's ``n`` terms.

Every feature but ``top`` and ``gap`` is free of the scores' scale, and those two are in the
z-units of the default system's fusion, which normalises each query's candidates: the same
model serves a LoCoMo dialog, a LongMemEval haystack and a real agent session (the transfer is
measured by ``python -m eval.confidence``, which fits the shipped model, ``confidence.json``
beside this module, and records its command there).

A term is a lower-cased word of two characters or more that is not a stopword; it is found in
a text when a word of the text starts with its first :data:`STEM` characters, or, for a short
word, is the term with one or two more characters (``topics`` and ``fixes`` find ``topic`` and
``fix``; ``fixture`` does not find ``fix``).

The shipped model was fitted for the system it names (:attr:`ConfidenceModel.system`); the
confidence of another system's hits is ``None`` (its scores mean something else).

Example:
    >>> f = hit_features("flaky fixture", [3.0, 1.0, 0.5], ["the flaky fixture", "x", "y"])
    >>> f["gap"], f["matched_top"], f["matched_any"]
    (2.0, 1.0, 1.0)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import msgspec
import numpy as np

from convlab.files import CONFIG, read_regular
from convlab.stopwords import ENGLISH_STOP_WORDS

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "FEATURES",
    "MODEL_FILE",
    "ConfidenceModel",
    "Verdict",
    "confidence",
    "features_frame",
    "hit_features",
    "load_model",
    "query_terms",
    "verdict",
]

FEATURES = ("top", "gap", "spread", "matched_top", "matched_any", "terms")
"""The features, in the order the model's coefficients follow."""
HITS = 10
"""Hits read per query: the first ten ranks (a search asks for at least these many)."""
STEM = 6
"""Characters of a term a word must start with to match it."""
MODEL_FILE = Path(__file__).with_name("confidence.json")
"""The shipped model (package data), written by ``python -m eval.confidence``."""

_WORD = re.compile(r"\w+")


class ConfidenceModel(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A fitted logistic regression over :data:`FEATURES`, with its default threshold.

    Attributes:
        system: the system whose hits it was fitted on (its name).
        features: the feature names, in coefficient order.
        mean, scale: the standardisation of each feature (``(x - mean) / scale``).
        coef, intercept: the logistic regression on the standardised features.
        threshold: the default threshold: below it a search has no confident match.
        hits: the ranks read per query.
        command: the command that fitted it.
    """

    system: str
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    threshold: float
    hits: int = HITS
    command: str = ""

    def __post_init__(self) -> None:
        n = len(self.features)
        if not (len(self.mean) == len(self.scale) == len(self.coef) == n):
            raise ValueError(f"a confidence model needs {n} means, scales and coefficients")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"the threshold {self.threshold} is not a probability")

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The confidence of each row of ``x`` (features in :attr:`features` order)."""
        z = (np.asarray(x, dtype=np.float64) - np.array(self.mean)) / np.array(self.scale)
        logit = z @ np.array(self.coef) + self.intercept
        return np.asarray(1.0 / (1.0 + np.exp(-logit)))


def load_model(path: str | Path | None = None) -> ConfidenceModel:
    """The model in ``path`` (default: the shipped :data:`MODEL_FILE`), read once per path.

    Raises:
        LoadError: the file is missing, not a regular file, or too big.
        msgspec.ValidationError: a field missing, unknown or of the wrong type.
    """
    return _load(Path(path) if path is not None else MODEL_FILE)


@cache
def _load(path: Path) -> ConfidenceModel:
    return msgspec.json.decode(read_regular(path, limit=CONFIG), type=ConfidenceModel)


def query_terms(text: str) -> tuple[str, ...]:
    """The terms of ``text``: lower-cased words of two characters or more, no stopwords.

    Example:
        >>> query_terms("What did we name the Kafka topic?")
        ('kafka', 'topic')
    """
    words = _WORD.findall(text.lower())
    return tuple(dict.fromkeys(w for w in words if len(w) > 1 and w not in ENGLISH_STOP_WORDS))


def _stems(text: str) -> set[str]:
    """Where a term's first :data:`STEM` characters are looked up.

    Each word's first ones, and a short word without its last one or two (``topics`` holds
    ``topic``).
    """
    out: set[str] = set()
    for w in _WORD.findall(text.lower()):
        out.add(w[:STEM])
        if len(w) <= STEM + 2:
            out.update(w[:-i] for i in (1, 2) if len(w) - i >= 2)
    return out


def _matched(terms: Sequence[str], stems: set[str]) -> float:
    return sum(t[:STEM] in stems for t in terms) / len(terms) if terms else 0.0


def hit_features(query: str, scores: Sequence[float], texts: Sequence[str]) -> dict[str, float]:
    """The :data:`FEATURES` of one query's hits (``scores`` and ``texts`` in rank order).

    No hit at all gives zero scores and nothing matched.
    """
    s = np.asarray(scores[:HITS], dtype=np.float64)
    terms = query_terms(query)
    top = float(s[0]) if s.size else 0.0
    gap = float(s[0] - s[1]) if s.size > 1 else 0.0
    sd = float(s.std()) if s.size > 1 else 0.0
    spread = (top - float(s.mean())) / sd if sd > 0 else 0.0
    first = _stems(texts[0]) if texts else set()
    five = set().union(*(_stems(t) for t in texts[:5])) if texts else set()
    return {
        "top": top,
        "gap": gap,
        "spread": spread,
        "matched_top": _matched(terms, first),
        "matched_any": _matched(terms, five),
        "terms": math.log1p(len(terms)),
    }


def features_frame(hits: pl.DataFrame, queries: Mapping[str, str]) -> pl.DataFrame:
    """``query_id`` and the :data:`FEATURES` of each query of ``queries`` (id -> text).

    ``hits`` are ranked hits (``query_id, rank, score, text``); a query without hits gets the
    features of no hit.
    """
    import polars as pl

    ranked = (
        hits.filter(pl.col("rank") <= HITS)
        .sort("query_id", "rank")
        .group_by("query_id", maintain_order=True)
        .agg("score", "text")
    )
    got = {q: (s, t) for q, s, t in ranked.iter_rows()}
    rows = []
    for qid, text in queries.items():
        scores, texts = got.get(qid, ([], []))
        rows.append({"query_id": qid, **hit_features(text, scores, texts)})
    return pl.DataFrame(rows, schema={"query_id": pl.String, **dict.fromkeys(FEATURES, pl.Float64)})


def confidence(
    query: str, hits: pl.DataFrame, system: str, model: ConfidenceModel | None = None
) -> float | None:
    """The confidence that ``query`` has an answer among what its ``hits`` were searched in.

    Args:
        query: the query's text.
        hits: its ranked hits (``rank, score, text``), at least the first :data:`HITS` the
            search found (fewer only when fewer docs matched).
        system: the name of the system that made them.
        model: the model (default: the shipped one).

    Returns:
        A probability, or ``None`` when the model was fitted for another system.
    """
    model = model or load_model()
    if system != model.system:
        return None
    ranked = hits.sort("rank").head(model.hits)
    f = hit_features(query, ranked["score"].to_list(), ranked["text"].to_list())
    x = np.array([[f[name] for name in model.features]])
    return float(model.predict(x)[0])


class Verdict(NamedTuple):
    """A search's confidence and the threshold it is held to.

    Attributes:
        confidence: :func:`confidence` (None: no model for the system).
        threshold: the least confidence of a confident match (None: none applies).
    """

    confidence: float | None
    threshold: float | None

    @property
    def confident(self) -> bool:
        """Whether the hits count as a match: no threshold applies, or it is met."""
        if self.confidence is None or self.threshold is None:
            return True
        return self.confidence >= self.threshold


def verdict(
    query: str,
    hits: pl.DataFrame,
    system: str,
    min_confidence: float | None = None,
    model: ConfidenceModel | None = None,
) -> Verdict:
    """The confidence of ``hits`` and the threshold: ``min_confidence``, else the model's.

    A ``min_confidence`` of 0 keeps every search. A system the model was not fitted for has no
    confidence, and no threshold.

    Raises:
        ValueError: ``min_confidence`` outside 0..1, or above 0 for a system without a model.
    """
    if min_confidence is not None and not 0.0 <= min_confidence <= 1.0:
        raise ValueError(f"the least confidence is {min_confidence}; it must be within 0..1")
    model = model or load_model()
    value = confidence(query, hits, system, model)
    if value is None:
        if min_confidence:
            raise ValueError(
                f"the confidence is fitted for the system {model.system!r}, not {system!r}"
            )
        return Verdict(None, None)
    return Verdict(value, model.threshold if min_confidence is None else min_confidence)
