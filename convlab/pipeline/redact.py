"""Replace strings that look like secrets with a marker before anything is embedded or stored.

Two rule sets run, each rule a named regular expression for one kind of secret:

- convlab's own rules (:mod:`convlab.pipeline.redact_rules`): provider key shapes, PEM private
  keys, JWTs, passwords in connection URLs, ``Authorization`` headers, literals assigned to a
  credential-like name (``DB_PASSWORD=...``) judged so that code is left alone, passwords on
  command lines (``mysql -p...``, ``--password=...``, ``sshpass -p '...'``) and in prose;
- gitleaks' rules (:mod:`convlab.pipeline.gitleaks`, about 200 shapes, read as data from the
  installed gitleaks, :mod:`convlab.pipeline.gitleaks_source`), with gitleaks' keywords, entropy
  floors and allowlists. Where gitleaks is not installed (it is on Linux x86_64), only convlab's
  own rules run, and :data:`RULES_VERSION` says so.

Own rules run first, so a secret both know gets convlab's marker. A key split across lines (a
backslash continuation or a hard wrap, :mod:`convlab.pipeline.redact_lines`) is looked for in a
view with those breaks removed, so the whole key is replaced, not only its first line. Every rule
has lowercase keywords; one pass of an Aho-Corasick automaton finds which occur in a text, and
only their rules run, which keeps redaction fast on the many texts with nothing to find.

The labelled corpora in ``tests/fixtures/secrets`` hold realistic secrets and look-alikes (git
SHAs, UUIDs, content hashes, lockfile integrity strings, base64 images) side by side;
``python -m eval.redact_bench`` (:mod:`convlab.studies.redact_bench`) measures recall, false
positives and speed on them.

Example:
    >>> redact("export OPENAI_API_KEY=sk-proj-abcdefghij0123456789ABCDEFGHIJ0123456789")
    'export OPENAI_API_KEY=[REDACTED:openai_key]'
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING

import ahocorasick

from convlab.pipeline.gitleaks import CHANGES_FILE, load_rules, rules_source
from convlab.pipeline.redact_credentials import JUDGING
from convlab.pipeline.redact_lines import joined
from convlab.pipeline.redact_places import JUDGING as PLACES_JUDGING
from convlab.pipeline.redact_rules import MARKER_PREFIX, RULES, Rule, rule_spans, rules_version

if TYPE_CHECKING:
    import polars as pl

    from convlab.loaders.corpus import Corpus

__all__ = [
    "REDACT_MODES",
    "RULES",
    "RULES_VERSION",
    "RedactMode",
    "Redaction",
    "Rule",
    "redact",
    "redact_blocks",
    "redact_corpus",
    "redact_mode",
    "redact_with_counts",
]


_REVISION = "2"  # raise when the engine changes how rules are applied


def _rules_version() -> str:
    """A hash of convlab's engine, rules and convlab.toml, then gitleaks' version.

    Example: ``convlab 3f2a9c1b7d0e + gitleaks 8.30.1 (TOML sha256 e163e53b9e7e)``, or
    ``convlab 3f2a9c1b7d0e + gitleaks: not installed``.
    """
    changes = hashlib.sha256(CHANGES_FILE.read_bytes()).hexdigest()
    parts = [_REVISION, rules_version(*JUDGING, *PLACES_JUDGING), changes]
    own = hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:12]
    return f"convlab {own} + {rules_source()}"


RULES_VERSION: str = _rules_version()
"""Changes whenever a rule, the engine or gitleaks' rules do; a store records it (manifest
``redact_rules``, shown by ``convlab stats``) to know what redacted its texts and when they need
redacting again."""


@dataclass(frozen=True, slots=True)
class Redaction:
    """The redacted text and how many secrets of each kind were replaced."""

    text: str
    counts: dict[str, int]


@dataclass(frozen=True, slots=True)
class _Scanner:
    """Every rule in the order it runs, and the automaton that finds their keywords."""

    names: tuple[str, ...]
    finders: tuple[Callable[[str], Iterable[tuple[int, int]]], ...]
    automaton: ahocorasick.Automaton  # keyword -> the indexes of the rules it lets run
    always: tuple[int, ...]  # rules without keywords, run on every text
    first_gitleaks: int  # rules from here on are gitleaks'


def _own_finder(rule: Rule) -> Callable[[str], list[tuple[int, int]]]:
    return lambda text: rule_spans(rule, text)


@cache
def _scanner() -> _Scanner:
    gitleaks = load_rules()
    names = [*(r.marker for r in RULES.values()), *(r.id for r in gitleaks.rules)]
    finders = [*(_own_finder(r) for r in RULES.values()), *(r.secrets for r in gitleaks.rules)]
    keywords = [*(r.hints for r in RULES.values()), *(r.keywords for r in gitleaks.rules)]
    rules_of: dict[str, list[int]] = {}
    for i, words in enumerate(keywords):
        for word in words:
            rules_of.setdefault(word, []).append(i)
    automaton = ahocorasick.Automaton()
    for word, indexes in sorted(rules_of.items()):
        automaton.add_word(word, tuple(indexes))
    automaton.make_automaton()
    always = tuple(i for i, words in enumerate(keywords) if not words)
    return _Scanner(tuple(names), tuple(finders), automaton, always, len(RULES))


Span = tuple[int, int, int]  # start, end, index of the rule that found it


def _scan(text: str) -> list[Span]:
    """The secrets every rule whose keyword ``text`` holds finds, in rule order.

    A found secret is masked (NUL characters, same length) before the next rule runs, so a
    later rule sees the text as redacted so far, as if the marker were there, and positions
    stay put.
    """
    sc = _scanner()
    present = {indexes for _, indexes in sc.automaton.iter(text.lower())}
    order = sorted({i for ix in present for i in ix}.union(sc.always)) if present else sc.always
    spans: list[Span] = []
    for i in order:
        # own rules see what earlier ones redacted; gitleaks' rules, as in gitleaks, each see
        # the text as own rules left it, so two overlapping shapes both count
        found = [
            (s, e, i) for s, e in sc.finders[i](text) if e > s and text.count("\0", s, e) < e - s
        ]
        spans += found
        if found and i < sc.first_gitleaks:
            text = _mask(text, found)
    return spans


def _mask(text: str, spans: Iterable[Span]) -> str:
    parts, done = [], 0
    for s, e, _ in sorted(spans):
        s = max(s, done)
        if e > s:
            parts += [text[done:s], "\0" * (e - s)]
            done = e
    return "".join(parts) + text[done:]


def _find(text: str) -> list[Span]:
    """Every secret of ``text``: first across removed line breaks, then in the text itself."""
    spans: list[Span] = []
    view = joined(text)
    if view is not None:
        for s, e, i in _scan(view.text):
            if any(s < b < e for b in view.breaks):  # inside one line: found below anyway
                spans.append((*view.original_span(s, e), i))
        if spans:
            text = _mask(text, spans)
    return spans + _scan(text)


def _merge(spans: list[Span]) -> list[Span]:
    """Overlapping spans as one, named by the rule that runs first."""
    out: list[Span] = []
    for s, e, i in sorted(spans):
        if out and s < out[-1][1]:
            ps, pe, pi = out[-1]
            out[-1] = (ps, max(pe, e), min(pi, i))
        else:
            out.append((s, e, i))
    return out


def redact_with_counts(text: str) -> Redaction:
    """Redact ``text`` and count the replacements per rule.

    Example:
        >>> r = redact_with_counts("PASSWORD=hunter2 and AKIAIOSFODNN7EXAMPLE")
        >>> r.text, r.counts
        ('PASSWORD=[REDACTED:password] and [REDACTED:aws_access_key]', {'aws_access_key': 1, \
'password': 1})
    """
    counts: dict[str, int] = {}
    if len(text) < 6:
        return Redaction(text, counts)
    spans = _merge(_find(text))
    if not spans:
        return Redaction(text, counts)
    names = _scanner().names
    parts, done = [], 0
    for s, e, i in spans:
        parts += [text[done:s], f"{MARKER_PREFIX}{names[i]}]"]
        counts[names[i]] = counts.get(names[i], 0) + 1
        done = e
    parts.append(text[done:])
    return Redaction("".join(parts), dict(sorted(counts.items())))


def redact(text: str) -> str:
    """``text`` with every secret-shaped string replaced by ``[REDACTED:<kind>]``."""
    return redact_with_counts(text).text


def _redact_column(values: pl.Series, mask: pl.Series | None = None) -> pl.Series:
    import polars as pl

    texts = values.to_list()
    keep = [True] * len(texts) if mask is None else mask.fill_null(False).to_list()
    out = [redact(t) if k and t else t for t, k in zip(texts, keep, strict=True)]
    return pl.Series(values.name, out, dtype=pl.String)


def redact_blocks(
    blocks: pl.DataFrame, *, block_types: Iterable[str] | None = None
) -> pl.DataFrame:
    """Redact the ``text`` and ``tool_input`` of blocks (all, or only the given block types).

    Args:
        blocks: a :data:`convlab.schema.BLOCKS` frame.
        block_types: redact only these block types (e.g. ``{"tool_result"}``); None = all.

    Returns:
        A new frame; the input is not changed.
    """
    mask = None if block_types is None else blocks["block_type"].is_in(sorted(set(block_types)))
    return blocks.with_columns(
        _redact_column(blocks["text"], mask), _redact_column(blocks["tool_input"], mask)
    )


@dataclass(frozen=True, slots=True)
class RedactMode:
    """What a store redacts before anything is embedded or stored.

    Attributes:
        name: the ``--redact`` choice.
        block_types: the block types whose text and tool input are redacted (None = all).
        titles: conversation titles are redacted too.
        description: one line for help texts.
    """

    name: str
    block_types: frozenset[str] | None
    titles: bool
    description: str


REDACT_MODES: dict[str, RedactMode] = {
    m.name: m
    for m in (
        RedactMode(
            name="all",
            block_types=None,
            titles=True,
            description="every stored or embedded text: prompts, replies, thinking, tool "
            "calls and outputs, titles",
        ),
        RedactMode(
            name="tool-output",
            block_types=frozenset({"tool_call", "tool_result"}),
            titles=False,
            description="tool calls and tool outputs only (the old default)",
        ),
        RedactMode(name="none", block_types=frozenset(), titles=False, description="nothing"),
    )
}


def redact_mode(name: str) -> RedactMode:
    """The mode called ``name``; a ValueError lists the valid names."""
    try:
        return REDACT_MODES[name]
    except KeyError:
        raise ValueError(
            f"unknown redaction mode {name!r}; choose one of {', '.join(REDACT_MODES)}"
        ) from None


def redact_corpus(corpus: Corpus, mode: str) -> Corpus:
    """``corpus`` with the texts that ``mode`` covers redacted (a new corpus; input unchanged).

    Example:
        >>> clean = redact_corpus(corpus, "all")  # doctest: +SKIP
    """
    m = redact_mode(mode)
    if m.block_types is not None and not m.block_types and not m.titles:
        return corpus
    blocks = redact_blocks(corpus.blocks, block_types=m.block_types)
    conversations = corpus.conversations
    if m.titles:
        conversations = _remade_titles(corpus, replace(corpus, blocks=blocks))
        conversations = conversations.with_columns(_redact_column(conversations["title"]))
    return replace(corpus, blocks=blocks, conversations=conversations)


def _remade_titles(corpus: Corpus, redacted: Corpus) -> pl.DataFrame:
    """``corpus``'s conversations, a title made of the first prompt made again from ``redacted``.

    A title clipped from a prompt can end inside a secret, which no rule then recognises.
    """
    import polars as pl

    from convlab.loaders.corpus import prompt_titles

    made, remade = prompt_titles(corpus), prompt_titles(redacted)
    cid, title = pl.col("conversation_id"), pl.col("title")
    return corpus.conversations.with_columns(
        pl.when(title == cid.replace_strict(made, default=None, return_dtype=pl.String))
        .then(cid.replace_strict(remade, default=None, return_dtype=pl.String))
        .otherwise(title)
        .alias("title")
    )
