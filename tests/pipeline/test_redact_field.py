"""Secrets of the shapes issue 25's trial found stored: provider keys gitleaks knows, passwords on
command lines and in prose, keys split across lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convlab.pipeline.redact import redact, redact_with_counts
from convlab.pipeline.redact_lines import joined
from convlab.studies.redact_bench import corpus_scores, leaks, load_corpus

SECRETS = Path(__file__).parents[1] / "fixtures" / "secrets"

FIELD_SECRETS, FIELD_LOOKALIKES = load_corpus("field", SECRETS)
PROSE_SAID, PROSE_NONE = load_corpus("prose", SECRETS)


def test_field_corpus_has_every_family_in_every_place() -> None:
    kinds = {s["kind"] for s in FIELD_SECRETS}
    assert kinds >= {
        "twilio",
        "mailgun",
        "shopify",
        "discord",
        "datadog",
        "vault",
        "linear",
        "new_relic",
        "postman",
        "cli_password",
        "wrapped",
    }
    assert {s["where"] for s in FIELD_SECRETS} == {
        "user",
        "assistant",
        "thinking",
        "tool_input",
        "tool_output",
        "title",
    }
    assert sum(s["kind"] == "wrapped" for s in FIELD_SECRETS) >= 8
    assert all("\n" in s["secret"] for s in FIELD_SECRETS if s["kind"] == "wrapped")


@pytest.mark.parametrize("item", FIELD_SECRETS, ids=[s["id"] for s in FIELD_SECRETS])
def test_every_field_secret_is_redacted_whole(item: dict[str, str]) -> None:
    assert leaks(item["secret"], item["text"])  # really there, every line of it
    out = redact(item["text"])
    assert leaks(item["secret"], out) == [], out
    assert redact(out) == out  # idempotent


@pytest.mark.parametrize("item", FIELD_LOOKALIKES, ids=[x["id"] for x in FIELD_LOOKALIKES])
def test_no_field_lookalike_is_touched(item: dict[str, str]) -> None:
    assert redact(item["text"]) == item["text"]


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("mysql -h db -uroot -pS3cr3t! shop", "S3cr3t!"),
        ("mysqldump -u app -p'Xk9#mQ2!w' db", "Xk9#mQ2!w"),
        ('sshpass -p "Tr0ub4dor&3" scp a b:', "Tr0ub4dor&3"),
        ("PGPASSWORD=Pg_2026!orders psql -h db", "Pg_2026!orders"),
        ("pg_dump --password=Zq8!vv2k app", "Zq8!vv2k"),
        ("wget --http-password W3tPass!9 https://x.io/a", "W3tPass!9"),
        ("openssl rsa -in k.pem -passin pass:Exp0rtMe!", "Exp0rtMe!"),
        ("redis-cli -h cache -a r3d1sPa55 ping", "r3d1sPa55"),
        ("htpasswd -b -c .htpasswd admin Htp4ss!x", "Htp4ss!x"),
        (
            "aws configure set aws_secret_access_key wJalrXUtnFEMIK7MDENGbPxRfiCY0987654321ab",
            "wJalrXUtnFEMIK7MDENGbPxRfiCY0987654321ab",
        ),
        ("gh secret set X --token ghq_Zx81Lmn0PqRs", "ghq_Zx81Lmn0PqRs"),
    ],
)
def test_passwords_on_command_lines(text: str, secret: str) -> None:
    assert secret not in redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "mysql -u root -p app",  # -p alone: mysql prompts
        "docker login -u ana --password-stdin",
        "psql --no-password -h db",
        "mysql --password=$DB_PASSWORD app",
        "pytest --pass-with-no-tests",
        "llm --max-tokens 1000 --temperature 0",
        "docker run --secret id=npmrc,src=$HOME/.npmrc app",
    ],
)
def test_command_lines_without_a_password_are_left_alone(text: str) -> None:
    assert redact(text) == text


def test_a_continued_key_is_redacted_whole_and_the_next_line_kept() -> None:
    text = "export STRIPE_KEY=sk_live_4eC39HqLyjWDarj\\\n    tZ1ZXMNrXZAWz7Fq && ./deploy\nok"
    out = redact_with_counts(text)
    assert out.text == "export STRIPE_KEY=[REDACTED:stripe_key] && ./deploy\nok"
    assert out.counts == {"stripe_key": 1}


def test_a_key_wrapped_at_a_fixed_width_is_redacted_whole() -> None:
    key = "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"
    line = f"remote: token={key} (expires in 7 days)"
    wrapped = "\n".join(line[i : i + 40] for i in range(0, len(line), 40))
    out = redact(wrapped)
    assert "WownKBfl" not in out
    assert "c13kUs9" not in out  # the second line of the key
    assert "expires in 7 days" in out.replace("\n", "")


@pytest.mark.parametrize(
    "text",
    [
        "AWS_SECRET_ACCESS_KEY=CYxU+w0A2c/MLpjN+E8A4r/knOh7k+gQvmUZKYiC\nregion = eu-west-1",
        "GITHUB_TOKEN=ghs_wm0fn8yA4YdLnAXUQJvcHzwbPjAp9u2FkWFz\nGITHUB_REPOSITORY=acme/api",
        "The function `load_configuration_from_environment_variables`\nreads the files.",
    ],
)
def test_lines_that_are_not_wrapped_are_not_joined(text: str) -> None:
    assert joined(text) is None


def test_prose_passwords_are_measured_not_promised() -> None:
    caught = [p for p in PROSE_SAID if not leaks(p["secret"], redact(p["text"]))]
    # made-up passwords (a digit, a symbol or an inner capital) are caught; dictionary words
    # ("letmein", "correct horse battery staple") are not: the README states the fraction
    assert len(caught) / len(PROSE_SAID) >= 0.65
    assert all(redact(p["text"]) == p["text"] for p in PROSE_NONE)
    said = {p["text"]: p for p in PROSE_SAID}
    assert said["my password is hunter2!"] in caught
    assert said["my password is letmein"] not in caught


def test_field_corpus_scores() -> None:
    scores = corpus_scores(redact, FIELD_SECRETS, FIELD_LOOKALIKES)
    assert scores["recall"] == 1.0, scores["missed"]
    assert scores["false_positives"] == 0, scores["false_positive_ids"]


def test_a_tool_input_with_an_escaped_continuation_is_redacted() -> None:
    command = "export HF_TOKEN=hf_FP9YYTObInL3\\\n    Na7f5w8K7UIeHi5E4YieSzA python x.py"
    text = json.dumps({"command": command})
    out = redact(text)
    assert "Na7f5w8K7UIeHi5E4" not in out
    assert "python x.py" in out
