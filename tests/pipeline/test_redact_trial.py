"""The trial corpora (40 families, 20 shapes, their look-alikes, in prompts, tool output and
thinking): every secret redacted whole, every look-alike untouched; each new rule by hand."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from convlab.pipeline.redact import redact
from convlab.studies.redact_bench import corpus_scores, kingfisher_scores, leaks, load_corpus
from convlab.studies.secret_corpus import CHANNELS, build

FAMILIES, FAMILY_LOOKALIKES = load_corpus("families", ".")
SHAPES, SHAPE_LOOKALIKES = load_corpus("shapes", ".")
SECRETS = [*FAMILIES, *SHAPES]
LOOKALIKES = [*FAMILY_LOOKALIKES, *SHAPE_LOOKALIKES]


def test_the_corpora_are_as_large_as_promised_and_made_the_same_every_time() -> None:
    assert (len(FAMILIES), len(SHAPES)) == (40 * 3, 20 * 3)
    assert len({x["kind"] for x in LOOKALIKES}) == 60
    assert len(LOOKALIKES) == 60 * 3
    for records in (FAMILIES, SHAPES, LOOKALIKES):
        for kind in {x["kind"] for x in records}:
            assert sorted(x["where"] for x in records if x["kind"] == kind) == sorted(CHANNELS)
    assert build("families") == (FAMILIES, FAMILY_LOOKALIKES)
    assert build("families", seed=1) != (FAMILIES, FAMILY_LOOKALIKES)
    assert len({x["id"] for x in [*SECRETS, *LOOKALIKES]}) == len(SECRETS) + len(LOOKALIKES)
    wrapped = [x for x in FAMILIES if x["kind"] == "wrapped_key"]
    assert all(x["secret"].count("\n") == 1 for x in wrapped)


@pytest.mark.parametrize("item", SECRETS, ids=[f"{s['kind']}-{s['where']}" for s in SECRETS])
def test_every_trial_secret_is_redacted_whole(item: dict[str, str]) -> None:
    assert leaks(item["secret"], item["text"])  # really there, every line of it
    out = redact(item["text"])
    assert leaks(item["secret"], out) == [], out
    assert redact(out) == out


@pytest.mark.parametrize("item", LOOKALIKES, ids=[f"{x['kind']}-{x['where']}" for x in LOOKALIKES])
def test_no_trial_lookalike_is_touched(item: dict[str, str]) -> None:
    assert redact(item["text"]) == item["text"]


def test_scores_are_given_per_place() -> None:
    scores = corpus_scores(redact, FAMILIES, FAMILY_LOOKALIKES)
    assert scores["recall_by_where"] == {
        "thinking": "40/40",
        "tool_output": "40/40",
        "user": "40/40",
    }
    assert scores["lookalikes_changed_by_where"] == {w: "0/30" for w in sorted(CHANNELS)}
    keep_all = corpus_scores(lambda t: t, SHAPES[:3], SHAPE_LOOKALIKES[:3])
    assert keep_all["recall_by_where"] == {"thinking": "0/1", "tool_output": "0/1", "user": "0/1"}


HEX32 = "0123456789abcdef" * 2
HEX40 = "0123456789abcdef0123456789abcdef01234567"

# (text, the same text redacted), worked out by hand
BY_HAND = [
    (
        f'client = Client("AC{HEX32}", "{HEX32}")',
        f'client = Client("AC{HEX32}", "[REDACTED:twilio_auth_token]")',
    ),
    (f"api_key: x\napp_key: {HEX40}\n", "api_key: x\napp_key: [REDACTED:datadog_app_key]\n"),
    (
        f'{{"type": "service_account", "private_key_id": "{HEX40}"}}',
        '{"type": "service_account", "private_key_id": "[REDACTED:private_key_id]"}',
    ),
    (
        "SECRET_KEY = 'django-insecure-k)9#mz+2q@w!x(7v=4^r_h-8t*1y&e$u)b%n0'",
        "SECRET_KEY = '[REDACTED:key_assignment]'",
    ),
    (
        "curl -u admin:Hq7-vLx2pN https://es.io/_health",
        "curl -u admin:[REDACTED:cli_password] https://es.io/_health",
    ),
    (
        "machine api.heroku.com\n  login me@acme.io\n  password Xk9vQ2mTz7\n",
        "machine api.heroku.com\n  login me@acme.io\n  password [REDACTED:netrc_password]\n",
    ),
    (
        '{"auths": {"ghcr.io": {"auth": "Y2k6czNjcjN0"}}}',
        '{"auths": {"ghcr.io": {"auth": "[REDACTED:docker_auth]"}}}',
    ),
    ("_auth=Y2k6czNjcjN0\n", "_auth=[REDACTED:npmrc_auth]\n"),
    ("db.acme.io:5432:app:app:Pg7x!2kq\n", "db.acme.io:5432:app:app:[REDACTED:pgpass_password]\n"),
    ("requirepass Rd5s-Xk2q\n", "requirepass [REDACTED:redis_password]\n"),
    ('psk="Wifi-2026-Pass"', 'psk="[REDACTED:wifi_psk]"'),
    ("define( 'DB_PASSWORD', 'Wp9!xq2Lm' );", "define( 'DB_PASSWORD', '[REDACTED:php_define]' );"),
    (
        'server.login("me@acme.io", "abcd efgh ijkl mnop")',
        'server.login("me@acme.io", "[REDACTED:positional_password]")',
    ),
    (
        "http://127.0.0.1:8888/lab?token=" + HEX32,
        "http://127.0.0.1:8888/lab?token=[REDACTED:url_token]",
    ),
    (
        '{"url":"https:\\/\\/hooks.slack.com\\/services\\/T0ABCDEF1\\/B0ABCDEF12\\/AbCdEfGhIjKlMnOpQrStUvWx"}',
        '{"url":"https:\\/\\/hooks.slack.com\\/services\\/[REDACTED:slack_webhook]"}',
    ),
    (
        " ›   Use heroku authorizations:create to generate a long-term token\n"
        "0b7c3a52-4d1e-4f6a-9c2b-8e5d7f1a3b6c\n",
        " ›   Use heroku authorizations:create to generate a long-term token\n"
        "[REDACTED:heroku_token]\n",
    ),
]

# (look-alike), each beside a rule above, left as it is
LEFT_ALONE = [
    'client = Client(os.environ["TWILIO_ACCOUNT_SID"], auth_token)',
    "app_key: ${DD_APP_KEY}",
    f'{{"commit": "{HEX40}"}}',
    'SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]',
    "docker run -u 1000:1000 python:3.11 && curl -u admin https://es.io",
    "machine api.example.com login USERNAME password PASSWORD",
    '{"auth": "oauth2"}',
    "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
    "2001:db8:85a3:0:0:8a2e:370:7334 at 10:11:12:13:14",
    "# requirepass foobared",
    "define( 'AUTH_KEY', 'put your unique phrase here' );",
    "r = requests.get(url, auth=(user, password))",
    "https://www.youtube.com/watch?v=dQw4w9WgXcQ&page_token=a1b2c3d4e5",
    '{"url":"https:\\/\\/api.slack.com\\/apps\\/A0123BCDEF"}',
    "heroku apps:info\nId: 0b7c3a52-4d1e-4f6a-9c2b-8e5d7f1a3b6c",
]


@pytest.mark.parametrize(("text", "redacted"), BY_HAND)
def test_each_new_rule_by_hand(text: str, redacted: str) -> None:
    assert redact(text) == redacted


@pytest.mark.parametrize("text", LEFT_ALONE)
def test_each_new_rules_lookalike_by_hand(text: str) -> None:
    assert redact(text) == text


def test_kingfisher_is_scored_from_its_findings(tmp_path: Path) -> None:
    # a stand-in for the binary: reports, in Kingfisher's JSON, the whole text of every file
    # whose text holds "AKIA" (so exactly the aws_access_key family is found)
    fake = tmp_path / "kingfisher"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, pathlib, sys\n"
        "folder, out = pathlib.Path(sys.argv[2]), sys.argv[sys.argv.index('-o') + 1]\n"
        "found = [{'finding': {'path': str(p), 'snippet': p.read_text()}}\n"
        "         for p in folder.glob('*.txt') if 'AKIA' in p.read_text()]\n"
        "pathlib.Path(out).write_text(json.dumps({'findings': found}) + '\\n')\n"
    )
    fake.chmod(0o755)
    scores = kingfisher_scores(fake)
    assert scores["families"]["redacted"] == 3
    assert scores["families"]["recall_by_kind"]["aws_access_key"] == "3/3"
    assert scores["families"]["false_positives"] == 0
    assert scores["shapes"]["redacted"] == 0  # the session token's AccessKeyId is ASIA...
