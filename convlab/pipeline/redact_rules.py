"""The redaction rules: one named pattern per kind of secret, and how a match is judged.

:mod:`convlab.pipeline.redact` applies them; this module holds what they
are. A rule is registered once
(a name registered twice is refused), in the order it runs: specific provider shapes first,
generic context rules (headers, URLs, assignments) last, so each secret gets the most precise
marker. :data:`RULES_VERSION` changes whenever a rule does, so a store can tell that texts
redacted by older rules need redacting again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["MARKER_PREFIX", "RULES", "RULES_VERSION", "Rule", "apply_rule", "hints_in"]

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


_REVISION = "1"  # raise when the judging code below changes without a pattern changing


def _rules_version() -> str:
    parts = [_REVISION, _NOT_SECRET.pattern, _ATTRIBUTE.pattern, _SNAKE.pattern]
    parts += [_CREDENTIAL_WORD.pattern, _TOKEN_ONLY.pattern, _TOKEN_CHARS.pattern]
    parts += [_IDENTIFIER.pattern, _LETTERS.pattern, _NAME_LIKE.pattern]
    for r in RULES.values():
        parts += [r.name, r.pattern.pattern, str(r.pattern.flags), *r.hints, str(r.group)]
        parts.append(getattr(r.keep, "__name__", ""))
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:12]


RULES_VERSION: str = _rules_version()
"""Changes whenever a rule changes; a store can record it to know its texts need redacting again."""


def hints_in(low: str) -> set[str]:
    """The hints of any rule found in ``low`` (a lowercased text)."""
    return {h for h in _HINTS if h in low}


def apply_rule(rule: Rule, text: str, counts: dict[str, int]) -> str:
    """``text`` with the matches of ``rule`` replaced by its marker, counted in ``counts``."""
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
