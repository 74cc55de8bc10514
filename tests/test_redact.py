"""Redaction: realistic secrets are replaced, ordinary code is left alone."""

from __future__ import annotations

import ftplib
import getpass
import hmac
import http.client
import imaplib
import netrc
import poplib
import secrets
import smtplib
import ssl
from pathlib import Path

import polars as pl
import pytest

from convlab import schema
from convlab.redact import redact, redact_blocks, redact_with_counts

SECRETS = [
    # (text, kind, the secret itself)
    (
        "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
        "openai_key",
        "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
    ),
    (
        'client = Anthropic(api_key="sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789")',
        "anthropic_key",
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    ),
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "aws_access_key", "AKIAIOSFODNN7EXAMPLE"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_key",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "git remote set-url origin https://ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789@github.com/o/r",
        "github_token",
        "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    ),
    ("SLACK_TOKEN=xoxb-123456789012-abcdefghijkl", "slack_token", "xoxb-123456789012-abcdefghijkl"),
    (
        "DATABASE_URL=postgres://admin:hunter2pass@db.example.com:5432/app",
        "url_credentials",
        "hunter2pass",
    ),
    (
        'curl -H "Authorization: Bearer abcdef1234567890abcdef1234567890" https://api.x.io',
        "bearer_token",
        "abcdef1234567890abcdef1234567890",
    ),
    ('db_password = "S3cr3t!pass"', "password", "S3cr3t!pass"),
    ("PASSWORD=hunter2hunter", "password", "hunter2hunter"),
    ('  "client_secret": "8f7d6c5b4a39281706f5e4d3",', "password", "8f7d6c5b4a39281706f5e4d3"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "private_key",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
    ),
    (
        "token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlF",
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlF",
    ),
]


@pytest.mark.parametrize(("text", "kind", "secret"), SECRETS)
def test_secret_is_replaced_by_its_marker(text: str, kind: str, secret: str) -> None:
    result = redact_with_counts(text)
    assert secret not in result.text
    assert f"[REDACTED:{kind}]" in result.text
    assert sum(result.counts.values()) == 1


ORDINARY = [
    "password = getpass()",
    "password_hash = bcrypt.hashpw(password, salt)",
    "if user.password == form.password:",
    "def check_password(password: str) -> bool:",
    "api_key = config.api_key",
    "new_pwd = old_password_value",
    'secret = os.environ["SECRET"]',
    "password: ${DB_PASSWORD}",
    'PASSWD = getpass.getpass("IMAP password: ")',
    "password_mgr = HTTPPasswordMgr()",
    "token_count = len(tokens)",
    "commit 3f2a9c1b7e4d5a6f8b9c0d1e2f3a4b5c6d7e8f90 fixes the login",
    'id = "550e8400-e29b-41d4-a716-446655440000"',
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "pip install scikit-learn  # the sk-learn step",
    'label = "Enter password"',
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_code_is_left_alone(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    "module", [smtplib, ftplib, imaplib, getpass, poplib, netrc, http.client, hmac, secrets, ssl]
)
def test_no_false_positive_on_standard_library_code(module: object) -> None:
    # Real code full of password/secret/token names; none of it holds a credential.
    source = Path(module.__file__).read_text()  # type: ignore[attr-defined]
    assert redact_with_counts(source).counts == {}


def test_redact_blocks_only_touches_the_chosen_block_types() -> None:
    blocks = schema.frame(
        [
            {
                "conversation_id": "c",
                "message_index": 0,
                "block_index": 0,
                "block_type": "text",
                "text": "PASSWORD=hunter2hunter",
                "is_error": False,
            },
            {
                "conversation_id": "c",
                "message_index": 1,
                "block_index": 0,
                "block_type": "tool_result",
                "text": "PASSWORD=hunter2hunter",
                "is_error": False,
            },
        ],
        schema.BLOCKS,
    )
    out = redact_blocks(blocks, block_types={"tool_result"})
    assert out["text"].to_list() == ["PASSWORD=hunter2hunter", "PASSWORD=[REDACTED:password]"]
    assert blocks["text"][1] == "PASSWORD=hunter2hunter"  # input unchanged
    assert out.schema == blocks.schema
    assert isinstance(out, pl.DataFrame)
