"""Redaction rules for credentials known by the place they stand in: a file's format, a call, a URL.

Registered in :data:`convlab.pipeline.redact_rules.RULES` after the shape rules and the rules of
:mod:`convlab.pipeline.redact_credentials`:

- files that hold a credential in a known field: ``.netrc`` (``machine ... password ...``), a
  docker ``config.json`` (``"auth": base64 of user:password``), ``.npmrc`` (``_auth=``,
  ``_password=``), ``.pgpass`` (``host:port:db:user:password``), ``redis.conf``
  (``requirepass``), ``wpa_supplicant.conf`` (``psk="..."``), a service-account JSON
  (``"private_key_id"``), WordPress' ``define('DB_PASSWORD', '...')``;
- credentials passed by position in code (``Client("AC...", "<token>")``,
  ``HTTPBasicAuth("user", "...")``, ``server.login("me@x.io", "...")``);
- tokens in a URL's query (``?token=``, ``&access_token=``);
- shapes no provider prefix names elsewhere: a PEM private key inside base64 (a Kubernetes
  ``tls.key``), an AWS session token, a Google OAuth access token (``ya29.``), the token
  ``heroku auth:token`` prints.

A value that is a placeholder (``${TOKEN}``, ``<password>``, ``PASSWORD``) is left alone, as in
every rule. :data:`JUDGING` lists the patterns the judging code uses, for the rules' version.
"""

from __future__ import annotations

import base64
import binascii
import re

from convlab.pipeline.redact_rules import Rule, is_placeholder, register

__all__ = ["JUDGING"]

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_WORDS = re.compile(r"[a-z_ ]+")  # put your unique phrase here, password_here
_APP_PASSWORD = re.compile(r"[a-z]{4}(?: [a-z]{4}){3}")  # a Google app password


def _b64(value: str) -> bytes:
    try:
        return base64.b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        return b""


def _not_user_password(value: str) -> bool:
    """A docker or npm ``auth`` that is not base64 of ``user:password``."""
    return is_placeholder(value) or b":" not in _b64(value)


def _not_private_key(value: str) -> bool:
    """Base64 that does not start with a PEM private key's header."""
    return b"PRIVATE KEY" not in _b64(value[:64])


def _not_literal(value: str) -> bool:
    """A placeholder, or words in lower case (``put your unique phrase here``)."""
    if _APP_PASSWORD.fullmatch(value):
        return False
    return len(value) < 4 or is_placeholder(value) or _WORDS.fullmatch(value) is not None


def _not_query_token(value: str) -> bool:
    kinds = (
        any(c.islower() for c in value),
        any(c.isupper() for c in value),
        any(c.isdigit() for c in value),
    )
    return is_placeholder(value) or sum(kinds) < 2


_PORT_FIELD = re.compile(r":(?:\d{2,5}|\*):")


def _pgpass_spans(rule: Rule, text: str) -> list[tuple[int, int]]:
    """The ``pgpass_password`` rule, tried only at the start of a line with a port field."""
    out: list[tuple[int, int]] = []
    done = -1
    for port in _PORT_FIELD.finditer(text):
        start = text.rfind("\n", 0, port.start()) + 1
        if start <= done:
            continue
        done = start
        m = rule.pattern.match(text, start)
        if m is not None and not is_placeholder(m.group(1)):
            out.append(m.span(1))
    return out


# files holding a credential in a known field
register(
    "netrc_password",
    r"\b(?:machine[ \t]+\S+|default)(?:\s+(?:login|account|port)\s+\S+)*\s+password\s+(\S+)",
    ["password"],
    group=1,
    keep=is_placeholder,
    anchors=["machine", "default"],
)
register(
    "docker_auth",
    r"\"auth\"\s*:\s*\"([A-Za-z0-9+/]{8,}={0,2})\"",
    ['"auth"'],
    group=1,
    keep=_not_user_password,
)
register(
    "npmrc_auth",
    r"(?<![\w-])_(?:auth|password)[ \t]*=[ \t]*\"?([A-Za-z0-9+/]{8,}={0,2})",
    ["_auth", "_password"],
    group=1,
    keep=_not_user_password,
)
register(
    "pgpass_password",
    # matched from a line's start, where a port field (:5432: or :*:) is (see _pgpass_spans)
    r"[ \t]*(?:[\w\-]+(?:\.[\w\-]+)+|localhost|\*):(?:\d{2,5}|\*):[^\s:]+:[^\s:]+:"
    r"((?:[^\s:\\]|\\.){4,200})[ \t]*\r?(?=\n|$)",
    [":"],
    finder=_pgpass_spans,
)
register(
    "redis_password",
    r"(?m)^[ \t]*(?:requirepass|masterauth)[ \t]+\"?([^\s\"]{4,200})\"?[ \t]*\r?$",
    ["requirepass", "masterauth"],
    group=1,
    keep=is_placeholder,
)
register("wifi_psk", r"\bpsk[ \t]*=[ \t]*\"([^\"\n]{8,63})\"", ["psk"], group=1)
register(
    "private_key_id",
    r"\"private_key_id\"\s*:\s*\"([a-f0-9]{40})\"",
    ["private_key_id"],
    group=1,
)
register(
    "php_define",
    r"\bdefine\s*\(\s*(['\"])\w*(?:PASSWORD|PASS|PWD|SECRET|KEY|SALT|TOKEN)\w*\1\s*,\s*"
    r"(['\"])((?:(?!\2)[^\n]){4,200})\2",
    ["define"],
    group=3,
    keep=_not_literal,
)
register(
    "datadog_app_key",
    r"(?i)\b(?:dd_|datadog_)?app(?:lication)?[_\-]key[\"']?[ \t]*[:=][ \t]*[\"']?([a-f0-9]{40})\b",
    ["app_key", "app-key", "application_key", "application-key"],
    group=1,
)
# credentials passed by position in code
register(
    "twilio_auth_token",
    r"\bAC[a-f0-9]{32}([\"'])\s*,\s*([\"'])([a-f0-9]{32})\2",
    ['"ac', "'ac"],
    group=3,
)
register(
    "positional_password",
    r"(?:\b(?:HTTPBasicAuth|HTTPDigestAuth|HTTPProxyAuth|BasicAuth|DigestAuth)\(|"
    r"\bauth ?= ?\(|\.login\()\s*(?:[rbuf]?([\"'])[^\"'\n]*\1|[\w.]+)\s*,\s*"
    r"[rbuf]?([\"'])([^\"'\n]{4,200})\2",
    ["auth(", "auth=", "auth =", ".login("],
    group=3,
    keep=_not_literal,
)
# tokens in a URL's query
register(
    "url_token",
    r"[?&](?:access_token|token|api_key|apikey|key|auth|client_secret|sig|password)="
    r"([A-Za-z0-9_\-.~+/%=]{8,400})",
    ["token=", "key=", "auth=", "secret=", "sig=", "password="],
    group=1,
    keep=_not_query_token,
)
# shapes no provider prefix names elsewhere
register(
    "base64_private_key",
    r"\bLS0tLS1CRUdJTi[A-Za-z0-9+/]{40,}={0,2}",
    ["ls0tls1crudjti"],
    keep=_not_private_key,
)
register(
    "aws_session_token",
    # the prefix is base64 of the token's fixed header: even a token cut short is taken
    r"\b(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE)[A-Za-z0-9+/]*={0,2}",
    ["iqojb3jpz2lux2vj", "fwogzxivyxdze"],
)
register("google_oauth_token", r"\bya29\.[A-Za-z0-9_\-]{20,}", ["ya29."])
register(
    "heroku_token",
    rf"(?i)(?:heroku[ \t]+auth:token|long-term token|token will expire)[^\n]*\n"
    rf"(?:[^\n]*\n){{0,2}}?[ \t]*({_UUID}|HRKU-[A-Za-z0-9_\-]{{20,}})\b",
    ["auth:token", "long-term token", "token will expire"],
    group=1,
)

JUDGING = (_WORDS.pattern, _APP_PASSWORD.pattern, _PORT_FIELD.pattern)
