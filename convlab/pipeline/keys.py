"""Key expansion: keyphrases appended to what a unit embeds, never to what it resurrects.

LongMemEval (Wu et al., 2025, section 5.2) indexes each value ``V`` under an expanded key
``K = V + keyphrases``; there the keyphrases come from an LLM. Here they are extracted, with no
model: YAKE (Campos et al., 2020, "YAKE! Keyword extraction from single documents using multiple
local features", Information Sciences 509), a statistical extractor of one text's own phrases
(word casing, position, frequency, context spread). YAKE and not KeyBERT on the same MiniLM:
KeyBERT picks the phrases whose MiniLM vectors are nearest the text's own MiniLM vector, so it
adds least to the dense view that already holds that vector, and it embeds every candidate
n-gram of every text (tens of thousands of extra model calls per corpus on a CPU), where YAKE
takes milliseconds and is deterministic.

A unit's ``text`` (what the dense index embeds and BM25 indexes) becomes its text, one space,
and each keyphrase in YAKE's order that still fits ``max_tokens`` (space-joined texts count the
sum of their tokens, :mod:`convlab.pipeline.tokens`), and ``n_tokens`` grows by theirs. Its
``chunk_ids`` do not change, so resurrection brings back the original text. Expanded texts
hash differently, so the embedding cache keeps them apart from the plain ones.

Where the phrases come from (:attr:`KeyExpansion.source`): ``unit``, the unit's own text (the
LongMemEval form: the key repeats the value's salient phrases), or ``session``, every chunk of
the unit's session (:func:`convlab.schema.session_id`): a short message gains what its whole
session was about.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import polars as pl

from convlab import schema
from convlab.loaders.corpus import Corpus
from convlab.pipeline.tokens import count_tokens

__all__ = [
    "INTERJECTIONS",
    "KEY_SOURCES",
    "KeyExpansion",
    "expand_keys",
    "keyphrases",
    "speakers",
]

KEY_SOURCES: tuple[str, ...] = ("unit", "session")
"""What a unit's keyphrases are extracted from (:attr:`KeyExpansion.source`)."""

INTERJECTIONS: frozenset[str] = frozenset(
    [
        "hey",
        "hi",
        "hello",
        "wow",
        "yeah",
        "yes",
        "oh",
        "ah",
        "haha",
        "lol",
        "thanks",
        "thank",
        "great",
        "cool",
        "awesome",
        "sure",
        "okay",
        "ok",
    ]
)
"""Chat words added to YAKE's English stopwords (fixed before any run): a greeting is no key."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyExpansion:
    """Keyphrases appended to each unit's embedded text (off unless a unit spec names one).

    Attributes:
        source: ``unit`` (the unit's own text) or ``session`` (its session's chunks).
        phrases: at most this many keyphrases per unit (fewer when they do not fit).
        max_words: the longest keyphrase, in words (YAKE's ``n``).

    Raises:
        ValueError: an unknown source (naming the valid ones), or counts out of range.
    """

    source: str = "session"
    phrases: int = 5
    max_words: int = 3

    def __post_init__(self) -> None:
        if self.source not in KEY_SOURCES:
            raise ValueError(f"key source {self.source!r} is not one of {', '.join(KEY_SOURCES)}")
        if isinstance(self.phrases, bool) or not 1 <= self.phrases <= 50:
            raise ValueError(f"key phrases must be 1 to 50, not {self.phrases!r}")
        if isinstance(self.max_words, bool) or not 1 <= self.max_words <= 5:
            raise ValueError(f"key max_words must be 1 to 5, not {self.max_words!r}")

    @property
    def label(self) -> str:
        """How reports name the expansion: ``keys=session:5``."""
        return f"keys={self.source}:{self.phrases}"

    def as_dict(self) -> dict[str, Any]:
        """The expansion as plain data (manifests, run configs, experiment files)."""
        return {"source": self.source, "phrases": self.phrases, "max_words": self.max_words}


def keyphrases(text: str, expansion: KeyExpansion, stopwords: Iterable[str] = ()) -> list[str]:
    """YAKE's best keyphrases of ``text``, best first (at most ``expansion.phrases``).

    ``stopwords`` (speaker names, say) join YAKE's English list and :data:`INTERJECTIONS`: no
    phrase starts or ends with one, and none is one.

    Raises:
        ImportError: without the ``convlab-memory[keys]`` extra.
    """
    if not text.strip():
        return []
    extractor = _extractor(expansion.phrases, expansion.max_words, frozenset(stopwords))
    return [str(phrase) for phrase, _ in extractor.extract_keywords(text)]


@lru_cache(maxsize=8)
def _extractor(top: int, n: int, extra: frozenset[str]) -> Any:
    """A YAKE extractor (made once per setting: its stopword list is read from a file)."""
    from convlab.extras import require

    yake = require("yake", "keys", feature="key expansion")
    base = yake.KeywordExtractor(lan="en")
    stop = set(base.stopword_set) | INTERJECTIONS | {w.lower() for w in extra}
    return yake.KeywordExtractor(lan="en", n=n, top=top, stopwords=stop)


def expand_keys(
    units: pl.DataFrame,
    chunks: pl.DataFrame,
    expansion: KeyExpansion,
    *,
    max_tokens: int,
    stopwords: Iterable[str] = (),
    corpus: Corpus | None = None,
) -> pl.DataFrame:
    """``units`` with keyphrases appended to each ``text`` within ``max_tokens``.

    Args:
        units: a :data:`convlab.schema.UNITS` frame.
        chunks: the chunks it was made of (the ``session`` source reads them).
        expansion: where the phrases come from and how many.
        max_tokens: the unit's token limit, [CLS] and [SEP] included.
        stopwords: words no phrase starts or ends with.
        corpus: the corpus the units were made from: its speakers' names are stopwords too
            (in a dialog every message starts with one, and a name is no key).

    Returns:
        A new frame: only ``text`` and ``n_tokens`` differ; ids and ``chunk_ids`` stay.

    Example:
        >>> spec = KeyExpansion(source="unit")
        >>> expand_keys(units, chunks, spec, max_tokens=256)  # doctest: +SKIP
    """
    stop = frozenset(stopwords) | (frozenset() if corpus is None else speakers(corpus))
    texts = units["text"].to_list()
    if expansion.source == "unit":
        sources = texts
    else:
        by_session = _session_texts(chunks)
        sources = [
            by_session.get(schema.session_id(c, t), "")
            for c, t in zip(units["conversation_id"], units["timestamp"], strict=True)
        ]
    found: dict[str, list[str]] = {}
    out_text, out_tokens = [], []
    for text, n, source in zip(texts, units["n_tokens"].to_list(), sources, strict=True):
        if source not in found:
            found[source] = keyphrases(source, expansion, stop)
        text, n = _appended(text, n, found[source], max_tokens)
        out_text.append(text)
        out_tokens.append(n)
    return units.with_columns(
        pl.Series("text", out_text, dtype=pl.String),
        pl.Series("n_tokens", out_tokens, dtype=pl.Int32),
    )


def speakers(corpus: Corpus) -> frozenset[str]:
    """The names of the corpus's speakers (a tool message's speaker is its tool: left out)."""
    m = corpus.messages.filter(pl.col("role") != "tool")
    return frozenset(m["speaker"].drop_nulls().unique().to_list())


def _appended(text: str, n_tokens: int, phrases: list[str], max_tokens: int) -> tuple[str, int]:
    """``text`` with each phrase (in order) that still fits, and the new token count."""
    added = []
    for phrase, cost in zip(phrases, count_tokens(phrases), strict=True):
        if n_tokens + cost <= max_tokens:
            added.append(phrase)
            n_tokens += cost
    return (" ".join([text, *added]) if added else text), n_tokens


def _session_texts(chunks: pl.DataFrame) -> dict[str, str]:
    """Each session's chunks joined by one space, in conversation order."""
    ordered = chunks.sort("conversation_id", "position")
    out: dict[str, list[str]] = {}
    for c, t, text in ordered.select("conversation_id", "timestamp", "text").iter_rows():
        out.setdefault(schema.session_id(c, t), []).append(text)
    return {k: " ".join(v) for k, v in out.items()}
