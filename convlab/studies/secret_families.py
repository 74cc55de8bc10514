"""The secrets of the trial corpora: 40 families of stored secrets and 20 shapes of credentials.

Each is a function of a :class:`~convlab.studies.secret_draw.Draw` giving ``(secret,
snippet)``: the secret as it stands in the snippet (line breaks included, for a key wrapped over
lines) and the snippet a file, a command or its output would hold. See
:mod:`convlab.studies.secret_corpus`.
"""

from __future__ import annotations

import base64
import json
import string
import textwrap
from collections.abc import Callable

from convlab.studies.secret_draw import B64, Draw, Shape

__all__ = ["FAMILIES", "pem"]


def pem(d: Draw, label: str, head: bytes, size: int) -> tuple[str, str]:
    """``(body, block)`` of a PEM block: base64 of ``head`` and random bytes, 64 to a line."""
    body = "\n".join(textwrap.wrap(base64.b64encode(head + d.bytes(size)).decode(), 64))
    return body, f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


_RSA = b"\x30\x82\x04\xa4\x02\x01\x00\x02\x82\x01\x01\x00"
_PKCS8 = b"\x30\x82\x04\xbe\x02\x01\x00\x30\x0d\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x01\x01"


def _env(name: str, value: str) -> tuple[str, str]:
    return value, f"{name}={value}"


def _gcp_json(d: Draw) -> tuple[str, str, str]:
    """A pasted service-account key: ``(private_key_id, key body, the JSON)``."""
    key_id = d.hex(40)
    body, block = pem(d, "PRIVATE KEY", _PKCS8, 300)
    account = {
        "type": "service_account",
        "project_id": f"acme-{d.digits(6)}",
        "private_key_id": key_id,
        "private_key": block + "\n",
        "client_email": "deployer@acme.iam.gserviceaccount.com",
        "client_id": d.digits(21),
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
    }
    text = json.dumps(account, indent=2)
    return key_id, body.replace("\n", "\\n"), text


def _gcp_key_id(d: Draw) -> tuple[str, str]:
    key_id, _, text = _gcp_json(d)
    return key_id, text


def _gcp_private_key(d: Draw) -> tuple[str, str]:
    _, body, text = _gcp_json(d)
    return body, text


def _twilio_positional(d: Draw) -> tuple[str, str]:
    token = d.hex(32)
    call = d.pick(("Client", "TwilioRestClient"))
    quote = d.pick(("'", '"'))
    return token, (
        "from twilio.rest import Client\n\n"
        f"client = {call}({quote}AC{d.hex(32)}{quote}, {quote}{token}{quote})\n"
        'client.messages.create(to="+15558675310", from_="+15017122661", body="hi")'
    )


def _datadog_app_key(d: Draw) -> tuple[str, str]:
    key = d.hex(40)
    return key, f"api_key: {d.hex(32)}\napp_key: {key}\nsite: datadoghq.eu"


def _wrapped(d: Draw) -> tuple[str, str]:
    """A key in a line a terminal wrapped at its width, the rest on the second line."""
    name, key = (
        d.pick(
            (
                f"ANTHROPIC_API_KEY=sk-ant-api03-{d.urlsafe(93)}AA",
                f"GITHUB_TOKEN=ghp_{d.alnum(36)}",
                f"aws_secret_access_key = {d.chars(B64, 40)}",
                f"SLACK_BOT_TOKEN=xoxb-{d.digits(12)}-{d.digits(13)}-{d.alnum(24)}",
                f"STRIPE_SECRET_KEY=sk_live_51{d.alnum(97)}",
            )
        )
        .replace(" = ", "=")
        .split("=", 1)
    )
    line = f"{d.pick(('export ', '', '  '))}{name}={key}"
    rest = d.rng.randrange(3, 31)  # the key's characters on the second line
    width = max(len(line) - rest, 40)  # a terminal is at least 40 wide
    line = " " * (width + rest - len(line)) + line  # indented to cross it, as in a YAML list
    comment = d.pick(("", "", "  # prod", " (rotated monthly)"))
    return f"{key[:-rest]}\n{key[-rest:]}", f"{line[:width]}\n{line[width:]}{comment}"


def _discord(d: Draw) -> tuple[str, str]:
    bot_id = base64.b64encode(d.digits(18).encode()).decode().rstrip("=")
    token = f"{bot_id}.{d.urlsafe(6)}.{d.urlsafe(38)}"
    return token, f'client.run("{token}")'


def _jwt(d: Draw) -> tuple[str, str]:
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    claims = json.dumps({"sub": d.digits(8), "exp": 1796000000}).encode()
    token = f"{head}.{base64.urlsafe_b64encode(claims).decode().rstrip('=')}.{d.urlsafe(43)}"
    return token, f'curl -H "Authorization: Bearer {token}" https://api.acme.io/v1/me'


def _rsa(d: Draw) -> tuple[str, str]:
    return pem(d, "RSA PRIVATE KEY", _RSA, 600)


def _openssh(d: Draw) -> tuple[str, str]:
    return pem(d, "OPENSSH PRIVATE KEY", b"openssh-key-v1\x00\x00\x00\x00\x04none", 400)


def _t(template: str, make: Callable[[Draw], str]) -> Shape:
    """A shape: the secret ``make`` draws, put in ``template`` at ``{s}``."""

    def shape(d: Draw) -> tuple[str, str]:
        secret = make(d)
        return secret, template.replace("{s}", secret)

    return shape


_UPPER_DIGITS = string.ascii_uppercase + string.digits


def _slack_path(d: Draw) -> str:
    return f"T{d.chars(_UPPER_DIGITS, 8)}/B{d.chars(_UPPER_DIGITS, 10)}/{d.alnum(24)}"


FAMILIES: tuple[tuple[str, Shape], ...] = (
    (
        "aws_access_key",
        _t(
            "aws_access_key_id = {s}",
            lambda d: "AKIA" + d.chars(string.ascii_uppercase + "234567", 16),
        ),
    ),
    ("aws_secret_key", _t("aws_secret_access_key = {s}", lambda d: d.chars(B64, 40))),
    ("github_pat", _t("GITHUB_TOKEN={s}", lambda d: "ghp_" + d.alnum(36))),
    (
        "github_fine_grained",
        _t(
            "origin  https://{s}@github.com/acme/api.git (fetch)",
            lambda d: f"github_pat_11{d.chars(_UPPER_DIGITS, 20)}_{d.alnum(59)}",
        ),
    ),
    (
        "gitlab_pat",
        _t(
            "git clone https://oauth2:{s}@gitlab.com/acme/infra.git",
            lambda d: "glpat-" + d.urlsafe(20),
        ),
    ),
    (
        "slack_bot_token",
        _t("SLACK_BOT_TOKEN={s}", lambda d: f"xoxb-{d.digits(12)}-{d.digits(13)}-{d.alnum(24)}"),
    ),
    ("slack_webhook", _t("SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{s}", _slack_path)),
    ("stripe_key", _t('stripe.api_key = "{s}"', lambda d: "sk_live_51" + d.alnum(97))),
    (
        "openai_key",
        _t("OPENAI_API_KEY={s}", lambda d: f"sk-proj-{d.urlsafe(74)}T3BlbkFJ{d.urlsafe(74)}"),
    ),
    ("anthropic_key", _t("ANTHROPIC_API_KEY={s}", lambda d: f"sk-ant-api03-{d.urlsafe(93)}AA")),
    (
        "google_api_key",
        _t(
            "https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key={s}",
            lambda d: "AIza" + d.urlsafe(35),
        ),
    ),
    ("gcp_private_key_id", _gcp_key_id),
    ("gcp_private_key", _gcp_private_key),
    ("twilio_positional", _twilio_positional),
    ("twilio_auth_token", _t("TWILIO_AUTH_TOKEN={s}", lambda d: d.hex(32))),
    ("datadog_app_key", _datadog_app_key),
    ("datadog_api_key", _t("DD_API_KEY={s}", lambda d: d.hex(32))),
    ("sendgrid_key", _t("SENDGRID_API_KEY={s}", lambda d: f"SG.{d.urlsafe(22)}.{d.urlsafe(43)}")),
    ("mailgun_key", _t("MAILGUN_API_KEY={s}", lambda d: "key-" + d.hex(32))),
    ("npm_token", _t("//registry.npmjs.org/:_authToken={s}", lambda d: "npm_" + d.alnum(36))),
    (
        "pypi_token",
        _t(
            "[pypi]\nusername = __token__\npassword = {s}",
            lambda d: "pypi-AgEIcHlwaS5vcmc" + d.urlsafe(150),
        ),
    ),
    ("huggingface_token", _t("HF_TOKEN={s}", lambda d: "hf_" + d.alnum(34))),
    (
        "telegram_bot_token",
        _t('bot = telebot.TeleBot("{s}")', lambda d: f"{d.digits(10)}:AA{d.urlsafe(33)}"),
    ),
    ("discord_bot_token", _discord),
    ("jwt", _jwt),
    ("rsa_private_key", _rsa),
    ("openssh_private_key", _openssh),
    (
        "postgres_url",
        _t("DATABASE_URL=postgres://app:{s}@db.internal:5432/app", lambda d: d.password()),
    ),
    (
        "azure_storage_key",
        _t(
            "DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey={s};"
            "EndpointSuffix=core.windows.net",
            lambda d: d.chars(B64, 86) + "==",
        ),
    ),
    ("digitalocean_token", _t("DIGITALOCEAN_TOKEN={s}", lambda d: "dop_v1_" + d.hex(64))),
    (
        "shopify_token",
        _t(
            'curl -H "X-Shopify-Access-Token: {s}" https://acme.myshopify.com/admin/api/shop.json',
            lambda d: "shpat_" + d.hex(32),
        ),
    ),
    ("vault_token", _t("VAULT_TOKEN={s}", lambda d: "hvs." + d.urlsafe(91))),
    ("new_relic_key", _t("NEW_RELIC_API_KEY={s}", lambda d: "NRAK-" + d.chars(_UPPER_DIGITS, 27))),
    ("linear_key", _t("LINEAR_API_KEY={s}", lambda d: "lin_api_" + d.alnum(40))),
    ("postman_key", _t("POSTMAN_API_KEY={s}", lambda d: f"PMAK-{d.hex(24)}-{d.hex(34)}")),
    ("heroku_api_key", _t("HEROKU_API_KEY={s}", lambda d: d.uuid())),
    ("cloudflare_token", _t("CLOUDFLARE_API_TOKEN={s}", lambda d: d.urlsafe(40))),
    (
        "mongodb_url",
        _t(
            'client = MongoClient("mongodb+srv://admin:{s}@cluster0.ab1cd.mongodb.net/")',
            lambda d: d.password(),
        ),
    ),
    (
        "atlassian_token",
        _t(
            "JIRA_API_TOKEN={s}",
            lambda d: f"ATATT3xFfGF0{d.urlsafe(170)}={d.chars('0123456789ABCDEF', 8)}",
        ),
    ),
    ("wrapped_key", _wrapped),
)
