"""Redaction rules for credentials known by their name or flag, not by their shape.

Registered in :data:`convlab.pipeline.redact_rules.RULES` after the shape rules, in this order:

- passwords and tokens on command lines: a flag's value (``--password=...``, ``--token ...``),
  the tools that take one glued to a short flag (``mysql -pSECRET``, ``sshpass -p '...'``) and
  the environment variables they read (``SSHPASS=...``);
- a random value assigned to an upper-case name ending in KEY (``DD_APP_KEY=...``);
- a literal assigned to a credential-like name in ``.env`` files, YAML, JSON and code
  (``DB_PASSWORD=...``, ``"client_secret": "..."``), judged so that code is left alone;
- a password said in prose (``my password is hunter2!``), taken only when it looks made up.

:data:`JUDGING` lists the patterns the judging code uses, for the rules' version.
"""

from __future__ import annotations

import re

from convlab.pipeline.redact_rules import (
    Rule,
    is_placeholder,
    random_token,
    register,
)

__all__ = ["JUDGING"]

_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")

# Passwords and tokens on command lines: a flag's value (`--password=...`, `--token ...`), the
# tools that take one glued to a short flag (`mysql -pSECRET`, `sshpass -p '...'`) and the
# environment variables they read (`SSHPASS=...`).
_VALUE = (
    r"""(?:'([^'\n]{1,200})'|"([^"\n]{1,200})"|([^\s'"`;|&<>(){}\-][^\s'"`;|&<>(){}]{0,199}))"""
)
_ARGS = r"[^\n|;&]*?\s"  # the command's other arguments, up to the flag
# `user:password` (curl -u): the password after the first colon
_USER_PASSWORD = (
    r"""(?:'[^':\n]*:([^'\n]{1,200})'|"[^":\n]*:([^"\n]{1,200})"|[^\s'":]*:([^\s'"`;|&]{1,200}))"""
)
# (name, pattern, hints): one rule each, all marked cli_password
_CLI_PASSWORD = (
    (
        "cli_mysql",
        rf"\b(?:mysql\w*|mariadb(?:-\w+)?)\b{_ARGS}-p(?=\S){_VALUE}",
        ["mysql", "mariadb"],
    ),
    ("cli_sshpass", rf"\bsshpass\s+(?:-[^p\s]\S*\s+)*-p\s*{_VALUE}", ["sshpass"]),
    ("cli_openssl", rf"(?<![\w-])-(?:passin|passout|pass)\s+pass:{_VALUE}", ["pass:"]),
    ("cli_redis", rf"\bredis-cli\b{_ARGS}-a\s+{_VALUE}", ["redis-cli"]),
    ("cli_ldap", rf"\bldap\w+\b{_ARGS}-w\s+{_VALUE}", ["ldap"]),
    ("cli_sqlcmd", rf"\bsqlcmd\b{_ARGS}-P\s+{_VALUE}", ["sqlcmd"]),
    ("cli_login", rf"\b(?:docker|podman|nerdctl)\s+login\b{_ARGS}-p\s+{_VALUE}", ["login"]),
    ("cli_smbclient", rf"\bsmbclient\b{_ARGS}-U\s*[^\s%]+%{_VALUE}", ["smbclient"]),
    ("cli_htpasswd", rf"\bhtpasswd\s+(?:-\w+\s+)+(?:[^\s-]\S*\s+){{2}}{_VALUE}", ["htpasswd"]),
    (
        "cli_aws",
        rf"\baws\s+configure\s+set\s+(?:\S*\.)?aws_(?:secret_access_key|session_token)\s+{_VALUE}",
        ["aws"],
    ),
    (
        "cli_env",
        rf"\b(?:SSHPASS|REDISCLI_AUTH|MYSQL_PWD|PGPASSWORD)={_VALUE}",
        ["sshpass=", "rediscli_auth=", "mysql_pwd=", "pgpassword="],
    ),
    ("cli_sudo", rf"\becho\s+{_VALUE}\s*\|\s*sudo\s+(?:-\w+\s+)*-S\b", ["sudo"]),
    ("cli_curl", rf"\bcurl\b{_ARGS}(?:-u|--user)(?:=|[ \t]*){_USER_PASSWORD}", ["curl"]),
    ("cli_nmcli", rf"\bnmcli\b{_ARGS}password\s+{_VALUE}", ["nmcli"]),
)


def _not_cli_password(value: str) -> bool:
    return len(value) < 3 or is_placeholder(value)


def _not_cli_token(value: str) -> bool:
    return is_placeholder(value) or not random_token(value)


register(
    "cli_password",
    rf"--(?<![\w-]--)(?:[a-z0-9]+-)*(?:password|passwd|pwd|pass|passphrase)(?:=|[ \t]+){_VALUE}",
    ["pass", "pwd"],
    group=None,
    keep=_not_cli_password,
    anchors=["--"],
)
for _name, _pattern, _hints in _CLI_PASSWORD:
    register(_name, _pattern, _hints, group=None, keep=_not_cli_password, kind="cli_password")
register(
    "cli_token",
    r"--(?<![\w-]--)(?:[a-z0-9]+-)*(?:token|api-?key|secret-key|client-secret|access-key)"
    rf"(?:=|[ \t]+){_VALUE}",
    ["token", "api-key", "apikey", "secret-key", "client-secret", "access-key"],
    group=None,
    keep=_not_cli_token,
    anchors=["--"],
)
# A random value assigned to an upper-case name ending in KEY (`DD_APP_KEY=...`, a header
# `DD-APPLICATION-KEY: ...`); lower-case names (`cache_key = ...`) are code.
_SYMBOL = frozenset("!@#$%^&*()+=~?<>[]{}|;:,")


def _not_key(value: str) -> bool:
    """Not a key: a placeholder, a UUID, or not random-looking (two kinds of character).

    The kinds are lower case, upper case, digits and symbols, so a Django key
    (``'(y7ob_im(hy=7*93h9...'``, lower case, digits and symbols) is one, and a name
    (``DJANGO_SECRET_KEY``) or a dotted path is not.
    """
    if is_placeholder(value) or _UUID.fullmatch(value) or any(c.isspace() for c in value):
        return True
    kinds = (
        any(c.islower() for c in value),
        any(c.isupper() for c in value),
        any(c.isdigit() for c in value),
        any(c in _SYMBOL for c in value),
    )
    return sum(kinds) < 2


register(
    "key_assignment",
    # matched from the `_KEY` (see Rule.anchors); the word before it must be upper case and not
    # one naming an id or a public key; a quoted value is taken whole, whatever it holds
    r"(?<=[A-Z0-9])(?<!PUB)(?<!PUBLIC)(?<!PRIMARY)(?<!FOREIGN)(?<!SORT)(?<!PARTITION)(?<!CACHE)"
    r"(?<!IDEMPOTENCY)(?<![_\-]ID)[_\-]KEY[\"']?[ \t]*[:=][ \t]*"
    r"(?:\"([^\"\n]{16,200})\"|'([^'\n]{16,200})'|([A-Za-z0-9_\-.~+/=]{16,200}))",
    ["_key", "-key"],
    group=None,
    keep=_not_key,
    anchors=["_key", "-key"],
)
# A literal assigned to a credential-like name: .env lines, YAML, JSON, code.
_CREDENTIAL_NAME = r"passw(?:or)?d|passwd|pwd|secret|api[_\-]?key|(?<=[_\-])token"
_NOT_CREDENTIAL = (
    r"hash|count|len|length|name|field|file|path|type|id|prompt|policy|url|label|placeholder|"
    r"hint|message|text|title|error|expire|expiry|header|sha|digest|checksum|arn|ref|manager|"
    r"store|provider|class|reset|rotation|version|env|var|limit|budget|usage|_ids?\b"
)
_NOT_MADE_UP = re.compile(
    r"(?i)(?:sha-?\d+|md5|utf-?\d+|base64|bcrypt|argon2\w*|pbkdf2\w*|scrypt|\d{1,5}|"
    r"\d+(?:st|nd|rd|th|s|x|%|px|ms|kb|mb|gb)|[a-z]+\.(?:py|js|ts|txt|md|env|json|yaml|yml|toml))"
)


def _made_up(value: str) -> bool:
    """A prose password: no code punctuation, and a digit, a symbol or a capital inside."""
    word = value.rstrip(".,;:!?)")
    if len(word) < 4 or is_placeholder(word) or _NOT_MADE_UP.fullmatch(word):
        return False
    if any(c in "()[]{}<>\\" for c in word) or "://" in word or word.startswith(("$", "/", "~/")):
        return False
    if word.isdigit():
        return len(word) >= 6
    digit = any(c.isdigit() for c in word)
    symbol = any(not c.isalnum() and c not in "-_" for c in word)
    inner_capital = any(c.isupper() for c in word[1:])
    return bool(digit or symbol or inner_capital) and any(c.isalpha() for c in word)


_CREDENTIAL_WORD_AT = re.compile(r"passw|pwd|secret|api[_\-]?key|(?<=[_\-])token", re.I)
_CREDENTIAL_STARTS = ("passw", "pwd", "secret", "api", "token")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")

_PATH = re.compile(r"~?/[\w./\-]+")
_ATTRIBUTE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*)?")
_IDENTIFIER = re.compile(r"[A-Za-z_][\w\-]*")
_LETTERS = re.compile(r"[A-Za-z_\-]+")
_NAME_LIKE = re.compile(r"[\w.\-]+")
_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_CREDENTIAL_WORD = re.compile(r"pass|pwd|secret|key|token", re.I)
_TOKEN_ONLY = re.compile(r"(?i)(?:(?!passw|pwd|secret|api[_\-]?key).)*")
# a cursor of a paged API (page_token=..., nextPageToken), not a credential
_PAGE_TOKEN = re.compile(r"(?i)(?:page|next|continuation|cursor|sync)[_\-]?token")


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
    if is_placeholder(value) or _PATH.fullmatch(value) or name.upper() in ("PWD", "OLDPWD"):
        return None  # PWD and OLDPWD are the shell's directories; a path names a secret's file
    if _ATTRIBUTE.fullmatch(value) and not any(c.isdigit() for c in value):
        return None  # config.api_key, but not ya29.a0AfH6SMBx
    if group == "bare" and m.string[m.end() : m.end() + 1] in ("(", "["):
        return None
    if _TOKEN_ONLY.fullmatch(name) and (not random_token(value) or _PAGE_TOKEN.search(name)):
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


def _assignment_spans(rule: Rule, text: str) -> list[tuple[int, int]]:
    """The ``password`` rule, tried at each credential word; the name is read back to its start."""
    out: list[tuple[int, int]] = []
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
        out.append(m.span(group))
        done = m.end(group)
    return out


register(
    "password",
    # Matched from the credential word (see _assignment_spans), not from the name's start:
    # a name of any length before it is slow to try at every word of a long line.
    rf"(?i)(?:{_CREDENTIAL_NAME})(?![\w\-]{{0,60}}(?:{_NOT_CREDENTIAL}))(?P<tail>[\w\-]{{0,60}})"
    r"[\"']?[ \t]*(?::=|=>|[:=])[ \t]*"
    r"(?:\"(?P<dq>[^\"\s]{6,120})\"|'(?P<sq>[^'\s]{6,120})'|(?P<bare>[^\s\"'`;,(){}\[\]]{6,200}))",
    ["pass", "pwd", "secret", "api_key", "api-key", "apikey", "_token", "-token"],
    finder=_assignment_spans,
)
# A password said in prose: "my password is hunter2!", "changed the root password to Tr0ub4dor&3".
# Only values that look made up are taken (a digit, a symbol or an inner capital): "the password is
# wrong" and "a passphrase of four words" stay. Recall on prose is partial; see the README.
_PROSE_WORD = r"(?:pass(?:word|wd|phrase|code)|pwd|pw)"
_OWNER = r"(?:(?:the|my|our|your|his|her|their|this|that|an?)\s+)?"
register(
    "prose_password",
    rf"(?i)(?<![\w-]){_PROSE_WORD}\b(?:\s+(?:for|of|on)\s+{_OWNER}[\w.@/-]+(?:\s+[a-z]+)?)?"
    r"(?:\s+(?:(?:is|was|are|will\s+be|should\s+be)(?:\s+(?:now|still|just|simply|actually))?:?"
    r"|to)|,?\s+which\s+is|\?\s+it'?s|\s*(?:->|=>|:))\s+[\"'`\u201c\u2018]?"
    r"([^\s\"'`\u201d\u2019]{4,64})",
    ["pass", "pwd", "pw "],
    group=1,
    keep=lambda v: not _made_up(v),
    anchors=["pass", "pwd", "pw"],
)


JUDGING = (
    _PATH.pattern,
    _ATTRIBUTE.pattern,
    _IDENTIFIER.pattern,
    _LETTERS.pattern,
    _NAME_LIKE.pattern,
    _SNAKE.pattern,
    _CREDENTIAL_WORD.pattern,
    _TOKEN_ONLY.pattern,
    _PAGE_TOKEN.pattern,
    _NOT_MADE_UP.pattern,
)
