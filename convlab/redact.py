"""Replace strings that look like secrets with a marker before anything is embedded or stored.

Each rule is a named regular expression for one kind of secret with a recognisable shape (a
provider's key prefix, a PEM block, a JWT, credentials in a URL, a literal assigned to a
password-like name). Rules match shapes, not entropy, so ordinary code (hashes, UUIDs, variable
names like ``password_hash``, ``password = getpass()``) is left alone; the tests hold realistic
secrets and realistic code side by side.

Example:
    >>> redact("export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789")
    'export OPENAI_API_KEY=[REDACTED:openai_key]'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

__all__ = ["RULES", "Redaction", "redact", "redact_blocks", "redact_counts"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of secret: a name, a pattern, and the group that holds the secret (0 = all)."""

    name: str
    pattern: re.Pattern[str]
    group: int = 0


def _r(name: str, pattern: str, group: int = 0, flags: int = 0) -> Rule:
    return Rule(name, re.compile(pattern, flags), group)


RULES: tuple[Rule, ...] = (
    _r(
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]+?"
        r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    ),
    _r("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    _r("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{32,}"),
    _r("aws_access_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    _r(
        "aws_secret_key",
        r"(?i)\baws_?secret_?access_?key\b[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})\b",
        1,
    ),
    _r("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,})\b"),
    _r("gitlab_token", r"\bglpat-[A-Za-z0-9_\-]{20,}\b"),
    _r("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}\b"),
    _r("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    _r("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,}\b"),
    _r("huggingface_token", r"\bhf_[A-Za-z]{34,}\b"),
    _r("jwt", r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
    _r("bearer_token", r"(?i)\bbearer\s+([A-Za-z0-9_\-\.=~+/]{20,})", 1),
    _r("url_credentials", r"\b[a-z][a-z0-9+.\-]*://[^\s:/@\[\]]+:([^\s@/\[\]]{3,})@", 1),
    # A quoted literal (or an unquoted env value) assigned to a password/secret/token-like name.
    # Names such as password_hash / token_count / secret_name are not credentials.
    _r(
        "password",
        r"(?i)(?P<name>\b[\w.\-]*(?:passw(?:or)?d|passwd|pwd|secret|api_?key|access_?token|auth_?token)"
        r"(?![\w\-]*(?:hash|count|len|length|name|field|file|path|type|id|prompt|policy|url))"
        r"[\w\-]*)[\"']?\s*[:=]\s*"
        r"(?:\"(?P<dq>[^\"\n]{6,120})\"|'(?P<sq>[^'\n]{6,120})'|(?P<bare>[^\s\"'`;,(){}\[\]]{8,}))",
    ),
)


@dataclass(frozen=True, slots=True)
class Redaction:
    """The redacted text and how many secrets of each kind were replaced."""

    text: str
    counts: dict[str, int]


def _marker(name: str) -> str:
    return f"[REDACTED:{name}]"


_NOT_SECRET = re.compile(
    r"^(?:\$\{?\w+\}?|<[^>]+>|\*+|x+|\.\.\.|None|null|true|false|changeme|\w+\(.*)$", re.I
)


def redact_with_counts(text: str) -> Redaction:
    """Redact ``text`` and count the replacements per rule."""
    counts: dict[str, int] = {}
    for rule in RULES:
        if rule.name == "password":
            text = _redact_assignments(text, rule, counts)
            continue

        def sub(m: re.Match[str], rule: Rule = rule) -> str:
            secret = m.group(rule.group)
            if secret is None:
                return m.group(0)
            counts[rule.name] = counts.get(rule.name, 0) + 1
            start, end = m.span(rule.group)
            whole_start = m.start(0)
            whole = m.group(0)
            return whole[: start - whole_start] + _marker(rule.name) + whole[end - whole_start :]

        text = rule.pattern.sub(sub, text)
    return Redaction(text, counts)


_CODE_NAME = re.compile(r"[a-z_][a-z0-9_]*|[A-Za-z_]+")
_ATTRIBUTE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def _redact_assignments(text: str, rule: Rule, counts: dict[str, int]) -> str:
    """The ``password`` rule: a literal assigned to a credential-like name.

    Quoted values are literals. An unquoted value is code, not a secret, when it is called
    (``HTTPPasswordMgr()``) or an attribute access (``config.api_key``); otherwise it counts when
    the name is an environment-style UPPER_CASE name (``PASSWORD=hunter2``) or the value does not
    look like a name (``pwd = new_password`` is code, ``pwd: S3cr3t99`` is not).
    """

    def sub(m: re.Match[str]) -> str:
        group = next(g for g in ("dq", "sq", "bare") if m.group(g) is not None)
        value = m.group(group)
        if _NOT_SECRET.match(value) or value.startswith("[REDACTED:"):
            return m.group(0)
        name = m.group("name")
        if group == "bare":
            called = text[m.end() : m.end() + 1] == "("
            if called or _ATTRIBUTE.fullmatch(value):
                return m.group(0)
            if not name.isupper() and _CODE_NAME.fullmatch(value):
                return m.group(0)
        counts[rule.name] = counts.get(rule.name, 0) + 1
        start, end = m.span(group)
        whole = m.group(0)
        return whole[: start - m.start(0)] + _marker(rule.name) + whole[end - m.start(0) :]

    return rule.pattern.sub(sub, text)


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
    types = None if block_types is None else set(block_types)
    mask = pl.lit(True) if types is None else pl.col("block_type").is_in(sorted(types))
    return blocks.with_columns(
        pl.when(mask)
        .then(pl.col("text").map_elements(redact, return_dtype=pl.String))
        .otherwise(pl.col("text"))
        .alias("text"),
        pl.when(mask & pl.col("tool_input").is_not_null())
        .then(pl.col("tool_input").map_elements(redact, return_dtype=pl.String))
        .otherwise(pl.col("tool_input"))
        .alias("tool_input"),
    )
