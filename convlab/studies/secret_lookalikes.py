"""The look-alikes of the trial corpora: 60 shapes that hold no secret and must come out unchanged.

The first 30 (hashes, ids, digests, images, placeholders of provider keys) go with the
``families`` corpus, the last 30 (the same places as the ``shapes`` corpus's credentials, holding
none: ``docker run -u 1000:1000``, a base64 certificate, ``_authToken=${NPM_TOKEN}``...) with the
``shapes`` corpus. Each is a function of a :class:`~convlab.studies.secret_draw.Draw` giving
``("", snippet)``; see :mod:`convlab.studies.secret_corpus`.
"""

from __future__ import annotations

import base64
import json
import struct
import textwrap
import zlib
from collections.abc import Callable

from convlab.studies.secret_draw import B64, Draw, Shape

__all__ = ["LOOKALIKES"]


def _l(make: Callable[[Draw], str]) -> Shape:
    return lambda d: ("", make(d))


def _png(d: Draw) -> str:
    """A real 8x8 RGB PNG of random pixels, base64 in a data URI."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + d.bytes(24) for _ in range(8))
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
    return "data:image/png;base64," + base64.b64encode(png).decode()


def _git_log(d: Draw) -> str:
    return "\n".join(
        f"commit {d.hex(40)}\nAuthor: Ana <ana@acme.io>\nDate:   Mon Nov 30 10:0{i}:00 2026\n\n"
        f"    fix: retry the upload ({i})\n"
        for i in range(2)
    )


def _github_content(d: Draw) -> str:
    text = "\n".join(f"line {i}: the quick brown fox {d.hex(6)}" for i in range(12))
    encoded = "\n".join(textwrap.wrap(base64.b64encode(text.encode()).decode(), 60))
    return json.dumps({"name": "README.md", "sha": d.hex(40), "content": encoded + "\n"})


def _cert(d: Draw) -> str:
    body = "\n".join(textwrap.wrap(base64.b64encode(b"0\x82\x03" + d.bytes(500)).decode(), 64))
    return f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----"


def _public_key(d: Draw) -> str:
    return f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{d.chars(B64, 300)} ana@laptop"


def _wrapped_prose(d: Draw) -> str:
    words = ("the", "index", "keeps", "every", "version", "of", "a", "conversation", "until")
    text = " ".join(d.pick(words) for _ in range(60))
    return textwrap.fill(text, 72)


_GENERAL: tuple[Shape, ...] = (
    _l(_git_log),
    _l(lambda d: f"$ git rev-parse HEAD\n{d.hex(40)}"),
    _l(lambda d: f"{d.hex(64)}  convlab-0.9.0.tar.gz\n{d.hex(64)}  convlab-0.9.0.whl"),
    _l(lambda d: f"MD5 ({d.pick(('a.iso', 'b.img'))}) = {d.hex(32)}"),
    _l(lambda d: f"sha512sum: {d.hex(128)}"),
    _l(lambda d: json.dumps({"id": d.uuid(), "name": "nightly", "status": "queued"})),
    _l(lambda d: f"request_id={d.uuid()} status=200 duration_ms=41"),
    _l(lambda d: f"Digest: sha256:{d.hex(64)}\nStatus: Image is up to date for python:3.11"),
    _l(lambda d: f'"integrity": "sha512-{d.chars(B64, 86)}=="'),
    _l(
        lambda d: (
            f"numpy==2.1.3 \\\n    --hash=sha256:{d.hex(64)} \\\n    --hash=sha256:{d.hex(64)}"
        )
    ),
    _l(lambda d: f"Here is the chart: ![chart]({_png(d)})"),
    _l(lambda d: f'<img alt="logo" src="{_png(d)}">'),
    _l(lambda d: "OPENAI_API_KEY=sk-...\nANTHROPIC_API_KEY=<your-key>"),
    _l(lambda d: 'export GITHUB_TOKEN="ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"'),
    _l(lambda d: "aws_access_key_id = ${AWS_ACCESS_KEY_ID}"),
    _l(
        lambda d: (
            'client = Client(os.environ["TWILIO_ACCOUNT_SID"], os.environ["TWILIO_AUTH_TOKEN"])'
        )
    ),
    _l(lambda d: f"account_sid: AC{d.hex(32)}\nauth_token: ${{TWILIO_AUTH_TOKEN}}"),
    _l(lambda d: "api_key: ${DD_API_KEY}\napp_key: ${DD_APP_KEY}\napp_key_name: ci-reader"),
    _l(lambda d: json.dumps({"type": "service_account", "client_id": d.digits(21)}, indent=2)),
    _l(lambda d: json.dumps({"commit": {"sha": d.hex(40), "url": "https://api.github.com/x"}})),
    _l(lambda d: f'ETag: W/"{d.hex(32)}"\nX-Request-Id: {d.uuid()}'),
    _l(_github_content),
    _l(lambda d: "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0 is only the header of a JWT"),
    _l(lambda d: f"golang.org/x/net v0.30.0 h1:{d.chars(B64, 43)}="),
    _l(lambda d: f'checksum = "{d.hex(64)}"'),
    _l(lambda d: f'{{file = "torch-2.13.0.whl", hash = "sha256:{d.hex(64)}"}}'),
    _l(_public_key),
    _l(lambda d: f"ED25519 key fingerprint is SHA256:{d.chars(B64, 43)}."),
    _l(lambda d: f'metadata:\n  uid: {d.uuid()}\n  resourceVersion: "{d.digits(7)}"'),
    _l(_wrapped_prose),
)

_SHAPED: tuple[Shape, ...] = (
    _l(lambda d: 'SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]'),
    _l(lambda d: "SECRET_KEY = get_random_secret_key()"),
    _l(lambda d: 'curl -u "$USER:$TOKEN" https://api.acme.io/v1/me'),
    _l(lambda d: "curl -u admin https://search.acme.io:9200/  # asks for the password"),
    _l(lambda d: "docker run --rm -u 1000:1000 -v $PWD:/src python:3.11 make test"),
    _l(lambda d: "chown -R www-data:www-data /var/www && ps -u postgres:postgres"),
    _l(lambda d: "heroku apps:info\n=== acme-api\nId: " + d.uuid() + "\nRegion: eu"),
    _l(lambda d: json.dumps({"auths": {"ghcr.io": {}}, "credsStore": "desktop"}, indent="\t")),
    _l(lambda d: json.dumps({"auth": "oauth2", "provider": "github"})),
    _l(lambda d: "machine api.example.com login USERNAME password PASSWORD"),
    _l(lambda d: "The machine login screen asks for a password first."),
    _l(lambda d: f"data:\n  tls.crt: {base64.b64encode(_cert(d).encode()).decode()}"),
    _l(_cert),
    _l(lambda d: f'{{"url":"https:\\/\\/api.slack.com\\/apps\\/A{d.alnum(10).upper()}"}}'),
    _l(lambda d: f'{{"avatar":"https:\\/\\/cdn.acme.io\\/img\\/{d.hex(32)}.png"}}'),
    _l(lambda d: "//registry.npmjs.org/:_authToken=${NPM_TOKEN}\nalways-auth=true"),
    _l(lambda d: "fe80:1:2:3:abcd and 2001:db8:85a3:0:0:8a2e:370:7334 and 10:11:12:13:14"),
    _l(lambda d: "localhost:5432:*:postgres:*"),
    _l(lambda d: "r = requests.get(url, auth=(user, password), timeout=10)"),
    _l(lambda d: 'session.auth = HTTPBasicAuth("user", "<password>")'),
    _l(lambda d: "server.login(os.environ['SMTP_USER'], os.environ['SMTP_PASSWORD'])"),
    _l(lambda d: f"https://www.youtube.com/watch?v={d.urlsafe(11)}&t=42s&page_token={d.hex(8)}"),
    _l(lambda d: "http://localhost:8888/lab?token=${JUPYTER_TOKEN}"),
    _l(
        lambda d: (
            "define( 'WP_DEBUG', false );\ndefine( 'AUTH_KEY', 'put your unique phrase here' );"
        )
    ),
    _l(lambda d: "# requirepass foobared\n# masterauth <master-password>"),
    _l(lambda d: 'network={\n    ssid="AcmeOffice"\n    key_mgmt=WPA-PSK\n}'),
    _l(lambda d: f'curl -H "X-Request-Id: {d.uuid()}" -H "Accept: application/json" https://x.io'),
    _l(lambda d: json.dumps({"RequestId": d.uuid(), "Arn": "arn:aws:iam::123456789012:role/ci"})),
    _l(lambda d: 'curl -H "Authorization: Bearer $(gcloud auth print-access-token)" https://x.io'),
    _l(lambda d: "protocol=https\nhost=git.acme.io\nusername=deploy\npassword=${GIT_PASSWORD}"),
)

_NAMES = (
    "git_log",
    "git_sha",
    "sha256sum",
    "md5",
    "sha512",
    "uuid_json",
    "uuid_log",
    "docker_digest",
    "npm_integrity",
    "pip_hashes",
    "png_markdown",
    "png_html",
    "key_placeholders",
    "token_placeholder",
    "aws_env",
    "twilio_env",
    "twilio_sid",
    "datadog_env",
    "gcp_client_id",
    "github_commit",
    "etag",
    "github_content",
    "jwt_header",
    "go_sum",
    "cargo_checksum",
    "poetry_hash",
    "ssh_public_key",
    "ssh_fingerprint",
    "k8s_uid",
    "wrapped_prose",
    "django_env",
    "django_call",
    "curl_env",
    "curl_prompt",
    "docker_user",
    "chown_user",
    "heroku_app_id",
    "docker_creds_store",
    "auth_word",
    "netrc_placeholder",
    "netrc_prose",
    "base64_certificate",
    "certificate",
    "escaped_url",
    "escaped_avatar",
    "npmrc_env",
    "ipv6",
    "pgpass_wildcards",
    "auth_variables",
    "auth_placeholder",
    "smtp_env",
    "url_params",
    "jupyter_env",
    "php_define_placeholder",
    "redis_comment",
    "wifi_no_psk",
    "request_id_header",
    "aws_request",
    "gcloud_command",
    "git_credential_env",
)
LOOKALIKES: tuple[tuple[str, Shape], ...] = tuple(zip(_NAMES, (*_GENERAL, *_SHAPED), strict=True))
