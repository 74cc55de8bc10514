"""Replace strings that look like secrets with a marker before anything is embedded or stored.

Each rule is a named regular expression for one kind of secret with a recognisable shape: a
provider's key prefix (``AKIA``, ``ghp_``, ``sk-ant-``, ``xoxb-``, ``sk_live_``, ``AIza``...), a
PEM private-key block, a JWT, a password in a connection URL, an ``Authorization`` header, or a
literal assigned to a credential-like name (``DB_PASSWORD=...``, ``"client_secret": "..."``).
Rules match shapes and context, not entropy, so ordinary code (git SHAs, UUIDs, content
hashes, lockfile integrity strings, base64 images, ``password_hash``, ``password = getpass()``)
is left alone. The labelled corpus in ``tests/fixtures/secrets`` holds realistic secrets and
look-alikes side by side; :mod:`convlab.redact_bench` measures recall, false positives and speed.

Each rule has a few lowercase *hints* (literal substrings); a rule runs on a text only when the
lowercased text contains one of them, which keeps redaction fast on the many texts with nothing
to find.

Example:
    >>> redact("export OPENAI_API_KEY=sk-proj-abcdefghij0123456789ABCDEFGHIJ0123456789")
    'export OPENAI_API_KEY=[REDACTED:openai_key]'
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

    from convlab.loaders.base import Corpus

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

MARKER_PREFIX = "[REDACTED:"


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of secret.

    Attributes:
        name: the kind, written in the marker ``[REDACTED:<name>]``.
        pattern: where the secret is; ``group`` names the part replaced (0 = the whole match).
        hints: lowercase literals, one of which every match contains (a fast pre-check).
        keep: given the secret, True when the match is not a secret after all (a placeholder,
            a name); None = every match is a secret.
    """

    name: str
    pattern: re.Pattern[str]
    hints: tuple[str, ...]
    group: int | str = 0
    keep: Callable[[str], bool] | None = None


_NOT_SECRET = re.compile(
    r"^(?:.*(?:\.\.\.|…).*|\[[^\]]*\]|\$\{?\w+\}?|\$\{\{.*\}\}|\{\{.*\}\}|<[^>]*>|%\(\w+\)s|\*+|x+|"
    r"None|null|true|false|changeme|example|redacted|pass|passwd|pwd|password|secret|token|key|"
    r"api_?key|(?:str|string|bytes|int|number|bool|boolean|any|object)\??)$",
    re.I,
)


def _placeholder(secret: str) -> bool:
    return bool(_NOT_SECRET.match(secret)) or secret.startswith(MARKER_PREFIX)


def _low_variety(secret: str) -> bool:
    """A random key mixes cases or digits; a placeholder (``sk-xxxx``) or a kebab name does not."""
    kinds = sum(
        (
            any(c.isdigit() for c in secret),
            any(c.isupper() for c in secret),
            any(c.islower() for c in secret),
        )
    )
    return kinds < 2


RULES: dict[str, Rule] = {}


def _rule(
    name: str,
    pattern: str,
    hints: Iterable[str],
    *,
    group: int | str = 0,
    flags: int = 0,
    keep: Callable[[str], bool] | None = None,
) -> None:
    if name in RULES:
        raise ValueError(f"redaction rule {name!r} is registered twice")
    RULES[name] = Rule(name, re.compile(pattern, flags), tuple(hints), group, keep)


_B64 = r"[A-Za-z0-9+/]"
_TOKEN = r"[A-Za-z0-9_\-]"
# Order matters: specific provider shapes first, generic context rules (headers, URLs,
# assignments) last, so each secret gets the most precise marker.
_rule(
    "private_key",
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,\-]*)",
    ["private key"],
    flags=re.S,
)
_rule("anthropic_key", rf"\bsk-ant-[a-z]+\d*-{_TOKEN}{{20,}}", ["sk-ant-"])
_rule(
    "openai_key",
    rf"\bsk-(?:proj-|svcacct-|admin-)?{_TOKEN}{{20,}}",
    ["sk-"],
    keep=_low_variety,
)
_rule(
    "aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", ["akia", "asia", "abia", "acca"]
)
_rule(
    "aws_secret_key",
    rf"(?i)(?:aws_?)?secret_?access_?key[\"']?\s*[:=]\s*[\"']?({_B64}{{40}})(?![A-Za-z0-9+/=])",
    ["secret_access", "secretaccess"],
    group=1,
)
_rule(
    "github_token",
    r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b",
    ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
)
_rule("gitlab_token", rf"\bgl(?:pat|dt|rt|ptt)-{_TOKEN}{{20,}}", ["glpat-", "gldt-", "glrt-"])
_rule(
    "slack_webhook",
    r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9/_\-]{20,})",
    ["hooks.slack.com"],
    group=1,
)
_rule(
    "slack_token",
    r"\b(?:xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-\d-[A-Za-z0-9\-]{10,})",
    ["xox", "xapp-"],
)
_rule("google_api_key", rf"\bAIza{_TOKEN}{{35}}(?!{_TOKEN})", ["aiza"])
_rule("google_oauth_secret", rf"\bGOCSPX-{_TOKEN}{{28}}(?!{_TOKEN})", ["gocspx-"])
_rule(
    "stripe_key",
    r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,}",
    ["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
)
_rule("stripe_webhook_secret", r"\bwhsec_[A-Za-z0-9+/=]{24,}", ["whsec_"])
_rule("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", ["npm_"])
_rule("pypi_token", rf"\bpypi-AgEIcHlwaS5vcmc{_TOKEN}{{50,}}", ["pypi-ageichlwas5vcmc"])
_rule("huggingface_token", r"\bhf_[A-Za-z0-9]{34,}\b", ["hf_"], keep=_low_variety)
_rule("sendgrid_key", rf"\bSG\.{_TOKEN}{{22}}\.{_TOKEN}{{43}}(?!{_TOKEN})", ["sg."])
_rule("telegram_bot_token", rf"(?<![0-9])\d{{8,10}}:AA{_TOKEN}{{33}}(?!{_TOKEN})", [":aa"])
_rule("digitalocean_token", r"\bdo[por]_v1_[a-f0-9]{64}\b", ["_v1_"])
_rule("azure_storage_key", rf"(?i)\bAccountKey=({_B64}{{86}}==)", ["accountkey="], group=1)
_rule("jwt", r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*", ["eyj"])
_rule(
    "basic_auth",
    rf"(?i)\bauthorization[\"']?\s*:\s*[\"']?basic\s+({_B64}{{8,}}={{0,2}})",
    ["authorization"],
    group=1,
)
_rule(
    "bearer_token",
    r"(?i)\bbearer\s+([A-Za-z0-9_\-\.=~+/]{20,})",
    ["bearer"],
    group=1,
    keep=_placeholder,
)
_rule(
    "url_credentials",
    r"://[^\s:/@\[\]\"'<>]{0,200}:([^\s@/\[\]\"'<>]{3,200})@",
    ["://"],
    group=1,
    keep=_placeholder,
)
# A literal assigned to a credential-like name: .env lines, YAML, JSON, code.
_CREDENTIAL_NAME = r"passw(?:or)?d|passwd|pwd|secret|api[_\-]?key|(?<=[_\-])token"
_NOT_CREDENTIAL = (
    r"hash|count|len|length|name|field|file|path|type|id|prompt|policy|url|label|placeholder|"
    r"hint|message|text|title|error|expire|expiry|header|sha|digest|checksum|arn|ref|manager|"
    r"store|provider|class|reset|rotation|version|env|var|limit|budget|usage|_ids?\b"
)
_rule(
    "password",
    # Matched from the credential word (see _redact_assignments), not from the name's start:
    # a name of any length before it is slow to try at every word of a long line.
    rf"(?i)(?:{_CREDENTIAL_NAME})(?![\w\-]{{0,60}}(?:{_NOT_CREDENTIAL}))(?P<tail>[\w\-]{{0,60}})"
    r"[\"']?[ \t]*[:=][ \t]*"
    r"(?:\"(?P<dq>[^\"\s]{6,120})\"|'(?P<sq>[^'\s]{6,120})'|(?P<bare>[^\s\"'`;,(){}\[\]]{6,200}))",
    ["pass", "pwd", "secret", "api_key", "api-key", "apikey", "_token", "-token"],
)
_CREDENTIAL_WORD_AT = re.compile(r"passw|pwd|secret|api[_\-]?key|(?<=[_\-])token", re.I)
_CREDENTIAL_STARTS = ("passw", "pwd", "secret", "api", "token")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
# Every hint of every rule, looked for once per text (faster here than one regular expression of
# all of them); most texts hold none.
_HINTS = tuple(sorted({h for r in RULES.values() for h in r.hints}))

_ATTRIBUTE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*)?")
_IDENTIFIER = re.compile(r"[A-Za-z_][\w\-]*")
_LETTERS = re.compile(r"[A-Za-z_\-]+")
_NAME_LIKE = re.compile(r"[\w.\-]+")
_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_CREDENTIAL_WORD = re.compile(r"pass|pwd|secret|key|token", re.I)
_TOKEN_ONLY = re.compile(r"(?i)(?:(?!passw|pwd|secret|api[_\-]?key).)*")
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_\-.~+/=:]{8,}")


def _random_token(value: str) -> bool:
    """Token-shaped: 8+ URL-safe characters mixing two of lower case, upper case and digits."""
    if not _TOKEN_CHARS.fullmatch(value):
        return False
    kinds = (any(c.islower() for c in value), any(c.isupper() for c in value))
    return sum((*kinds, any(c.isdigit() for c in value))) >= 2


def _assigned_secret(m: re.Match[str], name: str) -> str | None:
    """The group holding the secret of a ``password`` match, or None when it is code.

    A value is a placeholder (``${DB_PASSWORD}``, ``<your-key>``, ``changeme``, ``string?``),
    code (called: ``HTTPPasswordMgr()``; an attribute or import path: ``config.api_key``,
    ``pkg.mod:Name``), a name (``secret_value``), or a literal. An UPPER_CASE (environment-style)
    name takes any literal but a name; another name does not take a name holding a credential
    word (``s3.secret-access-key``), a snake_case name (``s3_connection``) or an identifier
    without a digit (``Optional``), since after ``password:`` or ``token =`` those are types and
    variables more often than secrets. ``hunter2``, ``Pg!2026-orders`` are literals. A name
    whose only credential word is ``token`` (``mask_token``, ``SLACK_TOKEN``) takes only a
    token-shaped value, since language models have tokens too.
    """
    group = next(g for g in ("dq", "sq", "bare") if m.group(g) is not None)
    value = m.group(group)
    if _placeholder(value):
        return None
    if _ATTRIBUTE.fullmatch(value) and not any(c.isdigit() for c in value):
        return None  # config.api_key, but not ya29.a0AfH6SMBx
    if group == "bare" and m.string[m.end() : m.end() + 1] in ("(", "["):
        return None
    if _TOKEN_ONLY.fullmatch(name) and not _random_token(value):
        return None  # mask_token="<mask>", IMAGE_TOKEN = "]<]image[>[": a model's tokens
    holds_word = _CREDENTIAL_WORD.search(value) is not None
    if name.isupper():
        return None if holds_word and _LETTERS.fullmatch(value) else group
    if holds_word and _NAME_LIKE.fullmatch(value):
        return None
    if _SNAKE.fullmatch(value):
        return None
    if _IDENTIFIER.fullmatch(value) and not any(c.isdigit() for c in value):
        return None
    return group


def _rules_version() -> str:
    parts = [_NOT_SECRET.pattern, _ATTRIBUTE.pattern, _SNAKE.pattern, _CREDENTIAL_WORD.pattern]
    for r in RULES.values():
        parts += [r.name, r.pattern.pattern, str(r.pattern.flags), *r.hints, str(r.group)]
        parts.append(getattr(r.keep, "__name__", ""))
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:12]


RULES_VERSION: str = _rules_version()
"""Changes whenever a rule changes; a store can record it to know its texts need redacting again."""


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
    present = {h for h in _HINTS if h in low}
    if not present:
        return Redaction(text, counts)
    for rule in RULES.values():
        if present.isdisjoint(rule.hints):
            continue
        text = _apply(rule, text, counts)
    return Redaction(text, counts)


def _apply(rule: Rule, text: str, counts: dict[str, int]) -> str:
    if rule.name == "password":
        return _redact_assignments(rule, text, counts)

    def sub(m: re.Match[str]) -> str:
        secret = m.group(rule.group)
        if secret is None or (rule.keep is not None and rule.keep(secret)):
            return m.group(0)
        counts[rule.name] = counts.get(rule.name, 0) + 1
        offset = m.start(0)
        start, end = m.span(rule.group)
        whole = m.group(0)
        return f"{whole[: start - offset]}{MARKER_PREFIX}{rule.name}]{whole[end - offset :]}"

    out = rule.pattern.sub(sub, text)
    return text if out == text else out


def _credential_words(text: str) -> list[int]:
    """Where a credential word may start, found in the lowercased text with plain ``find``.

    Three times faster than a case-insensitive regular expression; ``rule.pattern.match``
    checks each place. Falls back to the regular expression when lowercasing changes the
    length (a few non-ASCII letters do), so positions would not line up.
    """
    low = text.lower()
    if len(low) != len(text):
        return [m.start() for m in _CREDENTIAL_WORD_AT.finditer(text)]
    out: list[int] = []
    for word in _CREDENTIAL_STARTS:
        i = low.find(word)
        while i >= 0:
            out.append(i)
            i = low.find(word, i + 1)
    return sorted(out)


def _redact_assignments(rule: Rule, text: str, counts: dict[str, int]) -> str:
    """The ``password`` rule, tried at each credential word; the name is read back to its start."""
    parts: list[str] = []
    done = 0
    for at in _credential_words(text):
        if at < done:
            continue
        m = rule.pattern.match(text, at)
        if m is None:
            continue
        start = at
        while start > max(done, at - 60) and text[start - 1] in _NAME_CHARS:
            start -= 1
        group = _assigned_secret(m, text[start : m.end("tail")])
        if group is None:
            continue
        counts[rule.name] = counts.get(rule.name, 0) + 1
        parts += [text[done : m.start(group)], f"{MARKER_PREFIX}{rule.name}]"]
        done = m.end(group)
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


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
        conversations = conversations.with_columns(_redact_column(conversations["title"]))
    return replace(corpus, blocks=blocks, conversations=conversations)
