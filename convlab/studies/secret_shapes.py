"""The 20 shapes of the ``shapes`` trial corpus: credentials known by where they stand.

Each is a function of a :class:`~convlab.studies.secret_draw.Draw` giving ``(secret,
snippet)``, as in :mod:`convlab.studies.secret_families`; see
:mod:`convlab.studies.secret_corpus`.
"""

from __future__ import annotations

import base64
import json
import string

from convlab.studies.secret_draw import B64, Draw, Shape
from convlab.studies.secret_families import pem

__all__ = ["SHAPES"]

# Django's get_random_secret_key() alphabet (django/core/management/utils.py)
_DJANGO = string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)"
# WordPress' secret-key service draws from letters, digits and punctuation; no quotes
_WORDPRESS = string.ascii_letters + string.digits + "!@#$%^&*()-_ []{}<>~`+=,.;:/?|"


def _django(d: Draw) -> tuple[str, str]:
    key = ""
    while ")" not in key[5:-5]:
        key = d.chars(_DJANGO, 50)
    prefix = d.pick(("django-insecure-", ""))
    quote = d.pick(("'", '"'))
    return prefix + key, f"SECRET_KEY = {quote}{prefix}{key}{quote}"


def _curl_user(d: Draw) -> tuple[str, str]:
    pw = d.password()
    user = d.pick(("admin", "ci-bot", "elastic"))
    return pw, f"curl -u {user}:{pw} -X GET https://search.acme.io:9200/_cluster/health"


def _heroku_token(d: Draw) -> tuple[str, str]:
    token = d.uuid()
    return token, (
        " ›   Warning: token will expire 03/01/2027\n"
        " ›   Use heroku authorizations:create to generate a long-term token\n"
        f"{token}"
    )


def _docker_auth(d: Draw) -> tuple[str, str]:
    auth = base64.b64encode(f"{d.pick(('ci', 'deploy'))}:{d.password()}".encode()).decode()
    host = d.pick(("https://index.docker.io/v1/", "ghcr.io", "registry.acme.io"))
    return auth, json.dumps({"auths": {host: {"auth": auth}}}, indent="\t")


def _netrc(d: Draw) -> tuple[str, str]:
    pw = d.pick((d.password(), d.uuid()))
    if d.rng.random() < 0.5:
        return pw, f"machine api.heroku.com\n  login me@acme.io\n  password {pw}\n"
    return pw, f"machine ftp.acme.io login deploy password {pw}"


def _base64_pem(d: Draw) -> tuple[str, str]:
    _, block = pem(d, d.pick(("RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY")), b"0\x82", 400)
    key = base64.b64encode((block + "\n").encode()).decode()
    crt = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB" + d.bytes(60)).decode()
    return key, (
        "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\nmetadata:\n  name: web-tls\n"
        f"data:\n  tls.crt: {crt}\n  tls.key: {key}\n"
    )


def _slack_escaped(d: Draw) -> tuple[str, str]:
    path = f"T{d.alnum(8).upper()}\\/B{d.alnum(10).upper()}\\/{d.alnum(24)}"
    url = f"https:\\/\\/hooks.slack.com\\/services\\/{path}"
    return path, f'{{"channel":"#alerts","webhook_url":"{url}","username":"deploy-bot"}}'


def _npmrc(d: Draw) -> tuple[str, str]:
    auth = base64.b64encode(f"deploy:{d.password()}".encode()).decode()
    line = d.pick((f"_auth={auth}", f"//npm.acme.io/:_auth={auth}", f'_auth = "{auth}"'))
    return auth, f"registry=https://npm.acme.io/\n{line}\nalways-auth=true\n"


def _pgpass(d: Draw) -> tuple[str, str]:
    pw = d.password(symbols="!#%&*+-.=?@^_~")
    return pw, f"db.acme.internal:5432:orders:orders_app:{pw}\nlocalhost:*:*:postgres:{pw}x"


def _requests_auth(d: Draw) -> tuple[str, str]:
    pw = d.password()
    call = d.pick(
        (
            f'requests.get(url, auth=("admin", "{pw}"), timeout=10)',
            f"session.auth = HTTPBasicAuth('admin', '{pw}')",
            f'aiohttp.BasicAuth("svc-report", "{pw}")',
        )
    )
    return pw, f"r = {call}"


def _smtp_login(d: Draw) -> tuple[str, str]:
    app = " ".join(d.chars(string.ascii_lowercase, 4) for _ in range(4))
    return app, (
        'with smtplib.SMTP_SSL("smtp.gmail.com", 465) as server:\n'
        f'    server.login("alerts@acme.io", "{app}")'
    )


def _url_token(d: Draw) -> tuple[str, str]:
    token = d.urlsafe(40)
    name = d.pick(("access_token", "token", "api_key"))
    return token, f"GET https://api.acme.io/v2/export?format=csv&{name}={token} 200"


def _jupyter(d: Draw) -> tuple[str, str]:
    token = d.hex(48)
    return token, (
        "    To access the server, open this file in a browser:\n"
        "        file:///root/.local/share/jupyter/runtime/jpserver-1234-open.html\n"
        "    Or copy and paste one of these URLs:\n"
        f"        http://localhost:8888/lab?token={token}\n"
        f"        http://127.0.0.1:8888/lab?token={token}"
    )


def _php_define(d: Draw) -> tuple[str, str]:
    if d.rng.random() < 0.5:
        pw = d.password()
        return pw, f"define( 'DB_USER', 'wp' );\ndefine( 'DB_PASSWORD', '{pw}' );"
    salt = d.chars(_WORDPRESS, 64)
    return salt, f"define( 'AUTH_KEY',         '{salt}' );"


def _redis(d: Draw) -> tuple[str, str]:
    pw = d.password()
    return pw, f"bind 0.0.0.0\nport 6379\n{d.pick(('requirepass', 'masterauth'))} {pw}\n"


def _wifi(d: Draw) -> tuple[str, str]:
    pw = d.password()
    if d.rng.random() < 0.5:
        return pw, f'network={{\n    ssid="AcmeOffice"\n    psk="{pw}"\n}}'
    return pw, f"nmcli device wifi connect AcmeOffice password {pw}"


def _api_key_header(d: Draw) -> tuple[str, str]:
    key = d.hex(32)
    name = d.pick(("X-API-Key", "x-api-key", "Api-Key", "X-Auth-Token"))
    return key, f'curl -H "{name}: {key}" https://api.acme.io/v1/items'


def _aws_session(d: Draw) -> tuple[str, str]:
    token = "IQoJb3JpZ2luX2VjE" + d.chars(B64, 600)
    creds = {
        "Credentials": {
            "AccessKeyId": "ASIA" + d.chars(string.ascii_uppercase + "234567", 16),
            "SecretAccessKey": d.chars(B64, 40),
            "SessionToken": token,
            "Expiration": "2026-12-02T08:00:00+00:00",
        }
    }
    return token, json.dumps(creds, indent=4)


def _gcloud_token(d: Draw) -> tuple[str, str]:
    token = f"ya29.a0{d.urlsafe(180)}"
    return token, token


def _git_credential(d: Draw) -> tuple[str, str]:
    pw = d.password()
    return pw, f"protocol=https\nhost=git.acme.io\nusername=deploy\npassword={pw}\n"


SHAPES: tuple[tuple[str, Shape], ...] = (
    ("django_secret_key", _django),
    ("curl_user", _curl_user),
    ("heroku_auth_token", _heroku_token),
    ("docker_config_auth", _docker_auth),
    ("netrc", _netrc),
    ("base64_pem_key", _base64_pem),
    ("slack_webhook_escaped", _slack_escaped),
    ("npmrc_auth", _npmrc),
    ("pgpass", _pgpass),
    ("positional_password", _requests_auth),
    ("smtp_login", _smtp_login),
    ("url_query_token", _url_token),
    ("jupyter_token", _jupyter),
    ("php_define", _php_define),
    ("redis_password", _redis),
    ("wifi_psk", _wifi),
    ("api_key_header", _api_key_header),
    ("aws_session_token", _aws_session),
    ("gcloud_access_token", _gcloud_token),
    ("git_credential", _git_credential),
)
