"""The rule-set corpus: for every gitleaks rule, a secret of its shape and two placeholders.

gitleaks tests its rules with secrets generated from each rule's regex. This does the same in
Python, at run time, from the rules convlab loads (:func:`convlab.pipeline.gitleaks.load_rules`,
read from the installed gitleaks), with a fixed seed: :func:`sample` walks the parse tree of the
rule's translated regex (``re._parser``), choosing each repeat's count, each alternative and each
character at random (the first alternative and the shortest repeat twice as often, so names and
separators read naturally). A sample is kept when, placed in a carrier text (a line of tool
output, a shell command in JSON tool input, a sentence of a reply), the rule on its own finds a
secret in it *as gitleaks would* (a keyword present, entropy above the floor, no allowlist): so
every positive is a secret gitleaks reports. A sample without any of the rule's keywords gets the
first one on the line before it. Up to 40 tries per rule and carrier; a rule with no such sample
is listed in ``not_generated``.

Negatives: the same carrier with the secret replaced by a placeholder (``${SECRET_VALUE}``,
``xxxxxxxx``) that gitleaks' global allowlist names; nothing may change.

Example:
    >>> corpus = build()  # doctest: +SKIP
    >>> len(corpus["positives"]), corpus["version"]  # doctest: +SKIP
    (590, 'gitleaks 8.30.1 (TOML sha256 e163e53b9e7e)')
"""

from __future__ import annotations

import json
import random
import re
import string
from functools import cache
from typing import Any

from convlab.pipeline.gitleaks import GitleaksRule, RuleSet, load_rules

__all__ = ["SEED", "build", "make", "sample"]

_P = re._parser  # type: ignore[attr-defined]
_C = re._constants  # type: ignore[attr-defined]
SEED = 2025
PRINTABLE = string.ascii_letters + string.digits + "_-./+=:@"
CATEGORIES = {
    _C.CATEGORY_DIGIT: string.digits,
    _C.CATEGORY_WORD: string.ascii_letters + string.digits + "_",
    _C.CATEGORY_SPACE: " ",
    _C.CATEGORY_NOT_DIGIT: string.ascii_letters,
    _C.CATEGORY_NOT_WORD: " .-",
    _C.CATEGORY_NOT_SPACE: string.ascii_letters + string.digits,
}


def _chars(items: list[Any]) -> str:
    negate = False
    pool: list[str] = []
    for op, arg in items:
        if op is _C.NEGATE:
            negate = True
        elif op is _C.LITERAL:
            pool.append(chr(arg))
        elif op is _C.RANGE:
            pool.extend(chr(c) for c in range(arg[0], arg[1] + 1) if chr(c).isprintable())
        elif op is _C.CATEGORY:
            pool.extend(CATEGORIES[arg])
    if negate:
        return "".join(c for c in PRINTABLE if c not in pool)
    return "".join(c for c in pool if c not in "\r\n\t\x0b\x0c") or " "


def _gen(tree: Any, rng: random.Random) -> str:
    out: list[str] = []
    for op, arg in tree:
        if op is _C.LITERAL:
            out.append(chr(arg))
        elif op is _C.NOT_LITERAL:
            out.append(rng.choice([c for c in string.ascii_letters if ord(c) != arg]))
        elif op is _C.ANY:
            out.append(rng.choice(string.ascii_letters))
        elif op is _C.IN:
            out.append(rng.choice(_chars(arg)))
        elif op is _C.CATEGORY:
            out.append(rng.choice(CATEGORIES[arg]))
        elif op is _C.BRANCH:
            alts = arg[1]
            out.append(_gen(alts[0] if rng.random() < 0.5 else rng.choice(alts), rng))
        elif op is _C.SUBPATTERN:
            out.append(_gen(arg[3], rng))
        elif op in (_C.MAX_REPEAT, _C.MIN_REPEAT, _C.POSSESSIVE_REPEAT):
            low, high, sub = arg
            high = low + 3 if high is _C.MAXREPEAT else high
            n = low if rng.random() < 0.5 else rng.randint(low, min(high, low + 8))
            out.extend(_gen(sub, rng) for _ in range(n))
        elif op is _C.ATOMIC_GROUP:
            out.append(_gen(arg, rng))
        # AT (anchors), ASSERT, ASSERT_NOT: nothing to write; the carrier supplies the context
    return "".join(out)


def sample(rule: GitleaksRule, rng: random.Random) -> str:
    """A random string of ``rule``'s pattern (not yet checked against entropy or allowlists)."""
    return _gen(_P.parse(rule.pattern.pattern, rule.pattern.flags), rng)


CARRIERS = (
    ("tool_output", lambda s: f"$ env | sort\nHOME=/home/ana\n{s}\nPATH=/usr/bin\n"),
    ("tool_input", lambda s: json.dumps({"command": f"deploy --check\n{s}\n"})),
    (
        "assistant",
        lambda s: f"The value in the config is\n{s}\nwhich looks like a live credential.",
    ),
)


def _found(rule: GitleaksRule, text: str) -> str | None:
    """The first secret ``rule`` reports in ``text``, as gitleaks would (keyword first)."""
    low = text.lower()
    if rule.keywords and not any(k in low for k in rule.keywords):
        return None
    for start, end in rule.secrets(text):
        return text[start:end]
    return None


def make(rules: RuleSet, seed: int = SEED) -> dict[str, Any]:
    """The corpus of ``rules``: ``positives``, ``negatives``, ``not_generated`` and provenance."""
    rng = random.Random(seed)
    positives: list[dict[str, Any]] = []
    negatives: list[dict[str, Any]] = []
    missing: list[str] = []
    for rule in rules.rules:
        made = 0
        for where, carry in CARRIERS:
            for _ in range(40):
                s = sample(rule, rng)
                if "\n" in s:
                    continue
                if rule.keywords and not any(k in s.lower() for k in rule.keywords):
                    s = f"{rule.keywords[0]}:\n{s}"  # the provider named on the line before
                text = carry(s)
                secret = _found(rule, text)
                if secret is None or len(secret) < 8:
                    continue
                n = len(positives) + 1
                positives.append(
                    {"id": f"r{n:03d}", "kind": rule.id, "where": where, "secret": secret}
                )
                positives[-1]["text"] = text
                for placeholder in ("${SECRET_VALUE}", "x" * len(secret)):
                    negatives.append(
                        {
                            "id": f"q{len(negatives) + 1:03d}",
                            "kind": rule.id,
                            "where": where,
                            "text": text.replace(secret, placeholder),
                        }
                    )
                made += 1
                break
        if not made:
            missing.append(rule.id)
    return {
        "version": rules.version,
        "rules": len(rules.rules),
        "seed": seed,
        "not_generated": missing,
        "positives": positives,
        "negatives": negatives,
    }


@cache
def build() -> dict[str, Any]:
    """The corpus of the rules convlab runs (:func:`make` of ``load_rules()``), made once."""
    return make(load_rules())
