"""Replace strings that look like secrets with a marker before anything is embedded or stored.

Each rule is a named regular expression for one kind of secret with a recognisable shape: a
provider's key prefix (``AKIA``, ``ghp_``, ``sk-ant-``, ``xoxb-``, ``sk_live_``, ``AIza``...), a
PEM private-key block, a JWT, a password in a connection URL, an ``Authorization`` header, or a
literal assigned to a credential-like name (``DB_PASSWORD=...``, ``"client_secret": "..."``).
Rules match shapes and context, not entropy, so ordinary code (git SHAs, UUIDs, content
hashes, lockfile integrity strings, base64 images, ``password_hash``, ``password = getpass()``)
is left alone. The rules live in :mod:`convlab.pipeline.redact_rules`; the labelled corpus in
``tests/fixtures/secrets`` holds realistic secrets and look-alikes side by side, and
:mod:`convlab.evaluation.redact_bench` measures recall, false positives and speed on it.

Each rule has a few lowercase *hints* (literal substrings); a rule runs on a text only when the
lowercased text contains one of them, which keeps redaction fast on the many texts with nothing
to find.

Example:
    >>> redact("export OPENAI_API_KEY=sk-proj-abcdefghij0123456789ABCDEFGHIJ0123456789")
    'export OPENAI_API_KEY=[REDACTED:openai_key]'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from convlab.pipeline.redact_rules import RULES, RULES_VERSION, Rule, apply_rule, hints_in

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
    "redact_counts",
    "redact_mode",
    "redact_with_counts",
]


@dataclass(frozen=True, slots=True)
class Redaction:
    """The redacted text and how many secrets of each kind were replaced."""

    text: str
    counts: dict[str, int]


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
    low = text.lower()
    present = hints_in(low)
    if not present:
        return Redaction(text, counts)
    for rule in RULES.values():
        if present.isdisjoint(rule.hints):
            continue
        text = apply_rule(rule, text, counts)
    return Redaction(text, counts)


def redact(text: str) -> str:
    """``text`` with every secret-shaped string replaced by ``[REDACTED:<kind>]``."""
    return redact_with_counts(text).text


def redact_counts(texts: Iterable[str]) -> dict[str, int]:
    """Total replacements per rule over ``texts`` (for summaries)."""
    total: dict[str, int] = {}
    for t in texts:
        for k, v in redact_with_counts(t).counts.items():
            total[k] = total.get(k, 0) + v
    return total


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
