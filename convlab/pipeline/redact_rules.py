"""convlab's own redaction rules: one named pattern per kind of secret, and how a match is judged.

:mod:`convlab.pipeline.redact` applies them; this module holds the registry and the rules for
secrets with a recognisable shape (provider key prefixes, PEM blocks, JWTs, URLs with a password,
``Authorization`` headers). :mod:`convlab.pipeline.redact_credentials` registers, after these,
the rules for credentials known by their name or flag (assignments, command lines, prose). A rule
is registered once (a name registered twice is refused), in the order it runs: specific shapes
first, generic context rules last, so each secret gets the most precise marker.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from convlab.pipeline.wordstart import WordStart

__all__ = [
    "MARKER_PREFIX",
    "RULES",
    "Rule",
    "is_placeholder",
    "random_token",
    "register",
    "rule_spans",
    "rules_version",
]

MARKER_PREFIX = "[REDACTED:"


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of secret.

    Attributes:
        name: the rule's name in the registry.
        pattern: where the secret is; ``group`` names the part replaced (0 = the whole match,
            None = the first group that matched).
        hints: lowercase literals, one of which every match contains (a fast pre-check).
        keep: given the secret, True when the match is not a secret after all (a placeholder,
            a name); None = every match is a secret.
        kind: the kind written in the marker ``[REDACTED:<kind>]`` (None = ``name``); several
            rules may share one.
        anchors: lowercase literals a match starts with: the pattern is tried only where the
            lowercased text holds one (much faster than a search for a case-insensitive
            pattern); empty = search the whole text.
        finder: finds the secrets itself, given the rule and a text (None = the pattern's
            matches, judged by ``keep``).
    """

    name: str
    pattern: re.Pattern[str]
    hints: tuple[str, ...]
    group: int | str | None = 0
    keep: Callable[[str], bool] | None = None
    kind: str | None = None
    anchors: tuple[str, ...] = ()
    finder: Callable[[Rule, str], list[tuple[int, int]]] | None = None
    search: WordStart = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "search", WordStart(self.pattern))

    @property
    def marker(self) -> str:
        """The kind written in this rule's marker."""
        return self.kind or self.name


_NOT_SECRET = re.compile(
    r"^(?:.*(?:\.\.\.|…).*|\[[^\]]*\]|\$\{?\w+\}?|\$\{\{.*\}\}|\{\{.*\}\}|<[^>]*>|%\(\w+\)s|\*+|x+|"
    r"None|null|true|false|changeme|example|redacted|pass|passwd|pwd|password|secret|token|key|"
    r"api_?key|(?:str|string|bytes|int|number|bool|boolean|any|object)\??)$",
    re.I,
)


def is_placeholder(secret: str) -> bool:
    """A placeholder, a marker or text already redacted, not a secret."""
    # "\0" marks text an earlier rule already redacted (see convlab.pipeline.redact)
    return bool(_NOT_SECRET.match(secret)) or secret.startswith(MARKER_PREFIX) or "\0" in secret


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


_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_\-.~+/=:]{8,}")


def random_token(value: str) -> bool:
    """Token-shaped: 8+ URL-safe characters mixing two of lower case, upper case and digits."""
    if not _TOKEN_CHARS.fullmatch(value):
        return False
    kinds = (any(c.islower() for c in value), any(c.isupper() for c in value))
    return sum((*kinds, any(c.isdigit() for c in value))) >= 2


RULES: dict[str, Rule] = {}


def register(
    name: str,
    pattern: str,
    hints: Iterable[str],
    *,
    group: int | str | None = 0,
    flags: int = 0,
    keep: Callable[[str], bool] | None = None,
    kind: str | None = None,
    anchors: Iterable[str] = (),
    finder: Callable[[Rule, str], list[tuple[int, int]]] | None = None,
) -> None:
    """Add a rule to :data:`RULES`, after those already there (see :class:`Rule`)."""
    if name in RULES:
        raise ValueError(f"redaction rule {name!r} is registered twice")
    compiled = re.compile(pattern, flags)
    RULES[name] = Rule(name, compiled, tuple(hints), group, keep, kind, tuple(anchors), finder)


_B64 = r"[A-Za-z0-9+/]"
_TOKEN = r"[A-Za-z0-9_\-]"
# Order matters: specific provider shapes first, generic context rules (headers, URLs,
# assignments) last, so each secret gets the most precise marker.
register(
    "private_key",
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,\-]*)",
    ["private key"],
    flags=re.S,
)
register("anthropic_key", rf"\bsk-ant-[a-z]+\d*-{_TOKEN}{{20,}}", ["sk-ant-"])
register(
    "openai_key",
    rf"\bsk-(?:proj-|svcacct-|admin-)?{_TOKEN}{{20,}}",
    ["sk-"],
    keep=_low_variety,
)
register(
    "aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", ["akia", "asia", "abia", "acca"]
)
register(
    "aws_secret_key",
    rf"(?i)(?:aws_?)?secret_?access_?key[\"']?\s*[:=]\s*[\"']?({_B64}{{40}})(?![A-Za-z0-9+/=])",
    ["secret_access", "secretaccess"],
    group=1,
)
register(
    "github_token",
    r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b",
    ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
    keep=_low_variety,
)
register("gitlab_token", rf"\bgl(?:pat|dt|rt|ptt)-{_TOKEN}{{20,}}", ["glpat-", "gldt-", "glrt-"])
register(
    "slack_webhook",
    r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9/_\-]{20,})",
    ["hooks.slack.com"],
    group=1,
)
register(
    "slack_token",
    r"\b(?:xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-\d-[A-Za-z0-9\-]{10,})",
    ["xox", "xapp-"],
)
register("google_api_key", rf"\bAIza{_TOKEN}{{35}}(?!{_TOKEN})", ["aiza"])
register("google_oauth_secret", rf"\bGOCSPX-{_TOKEN}{{28}}(?!{_TOKEN})", ["gocspx-"])
register(
    "stripe_key",
    r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,}",
    ["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
)
register("stripe_webhook_secret", r"\bwhsec_[A-Za-z0-9+/=]{24,}", ["whsec_"])
register("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", ["npm_"])
register("pypi_token", rf"\bpypi-AgEIcHlwaS5vcmc{_TOKEN}{{50,}}", ["pypi-ageichlwas5vcmc"])
register("huggingface_token", r"\bhf_[A-Za-z0-9]{34,}\b", ["hf_"], keep=_low_variety)
register("sendgrid_key", rf"\bSG\.{_TOKEN}{{22}}\.{_TOKEN}{{43}}(?!{_TOKEN})", ["sg."])
register("telegram_bot_token", rf"(?<![0-9])\d{{8,10}}:AA{_TOKEN}{{33}}(?!{_TOKEN})", [":aa"])
register("digitalocean_token", r"\bdo[por]_v1_[a-f0-9]{64}\b", ["_v1_"])
# Shapes gitleaks misses or takes only beside the provider's name (found in a trial on real
# histories).
register("vault_token", r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}", ["hvs.", "hvb.", "hvr."])
register(
    "newrelic_key",
    r"\bNR(?:AK|II|JS)-[A-Za-z0-9]{19,32}\b|\b[a-f0-9]{36}NRAL\b",
    ["nrak-", "nrii-", "nrjs-", "nral"],
)
register(
    "discord_webhook",
    r"discord(?:app)?\.com/api/webhooks/\d+/([A-Za-z0-9_\-]{60,})",
    ["/api/webhooks/"],
    group=1,
)
register("mailgun_key", r"\b(?:key|pubkey)-[a-f0-9]{32}\b", ["key-"])
# A Discord bot token: base64 of the bot's id (digits, so M, N or O first), a timestamp, an HMAC.
# No literal every token holds: it runs on every text (a search led by a class of three letters).
register(
    "discord_bot_token",
    # the class first lets the search skip to an M, N or O; the look-behind is the word boundary
    r"[MNO](?<![A-Za-z0-9_\-][MNO])[A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}\b",
    [],
)
register("azure_storage_key", rf"(?i)\bAccountKey=({_B64}{{86}}==)", ["accountkey="], group=1)
register("jwt", r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*", ["eyj"])
register(
    "basic_auth",
    rf"(?i)\bauthorization[\"']?\s*:\s*[\"']?basic\s+({_B64}{{8,}}={{0,2}})",
    ["authorization"],
    group=1,
    keep=is_placeholder,
    anchors=["authorization"],
)
register(
    "bearer_token",
    r"(?i)\bbearer\s+([A-Za-z0-9_\-\.=~+/]{20,})",
    ["bearer"],
    group=1,
    keep=is_placeholder,
)
register(
    "url_credentials",
    r"://[^\s:/@\[\]\"'<>]{0,200}:([^\s@/\[\]\"'<>]{3,200})@",
    ["://"],
    group=1,
    keep=is_placeholder,
)


def rule_spans(rule: Rule, text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each secret ``rule`` finds in ``text``."""
    if rule.finder is not None:
        return rule.finder(rule, text)
    if rule.group == 0 and rule.keep is None and not rule.anchors:
        return [m.span() for m in rule.search.finditer(text)]
    out: list[tuple[int, int]] = []
    for m in _matches(rule, text):
        group = rule.group
        if group is None:
            group = next((i for i, g in enumerate(m.groups(), start=1) if g is not None), 0)
        secret = m.group(group)
        if secret is None or (rule.keep is not None and rule.keep(secret)):
            continue
        out.append(m.span(group))
    return out


def _matches(rule: Rule, text: str) -> Iterator[re.Match[str]]:
    """The matches of ``rule``: tried at its anchors when it has some, else searched for."""
    if not rule.anchors:
        yield from rule.search.finditer(text)
        return
    low = text.lower()
    if len(low) != len(text):  # a few non-ASCII letters lowercase to two characters
        yield from rule.pattern.finditer(text)
        return
    starts = sorted({i for a in rule.anchors for i in _find_all(low, a)})
    done = 0
    for at in starts:
        if at < done:
            continue
        m = rule.pattern.match(text, at)
        if m is not None:
            yield m
            done = m.end()


def _find_all(low: str, word: str) -> Iterator[int]:
    i = low.find(word)
    while i >= 0:
        yield i
        i = low.find(word, i + 1)


_REVISION = "3"  # raise when the judging code changes without a pattern changing


def rules_version(*judging: str) -> str:
    """A hash of every rule and of the ``judging`` patterns their code uses (12 hex digits).

    It changes whenever a rule does, so a store can tell that texts redacted by older rules
    need redacting again.
    """
    parts = [_REVISION, _NOT_SECRET.pattern, _TOKEN_CHARS.pattern, *judging]
    for r in RULES.values():
        parts += [r.name, r.pattern.pattern, str(r.pattern.flags), *r.hints, str(r.group)]
        parts += [r.marker, *r.anchors]
        parts += [getattr(r.keep, "__name__", ""), getattr(r.finder, "__name__", "")]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:12]
