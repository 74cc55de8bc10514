"""Redaction: realistic secrets are replaced, ordinary code is left alone."""

from __future__ import annotations

import ftplib
import getpass
import hashlib
import hmac
import http.client
import imaplib
import json
import netrc
import poplib
import secrets
import smtplib
import ssl
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from convlab import load, schema
from convlab.embed import HashEmbedder
from convlab.loaders.blocks import BlockRow
from convlab.loaders.corpus import Corpus
from convlab.pipeline.policy import ContentPolicy
from convlab.pipeline.redact import (
    REDACT_MODES,
    RULES,
    redact,
    redact_blocks,
    redact_corpus,
    redact_mode,
    redact_with_counts,
)
from convlab.store import REDACT_CHOICES, Store, StoreConfig
from convlab.studies.secret_corpus import TRIAL_CORPORA
from convlab.studies.secret_corpus import build as build_trial
from tests.helpers import corpus as make_corpus

FIXTURES = Path(__file__).parent.parent / "fixtures" / "secrets"
CORPUS_SECRETS: list[dict[str, str]] = json.loads((FIXTURES / "secrets.json").read_text())
LOOKALIKES: list[dict[str, str]] = json.loads((FIXTURES / "lookalikes.json").read_text())
FIELD_SECRETS: list[dict[str, str]] = json.loads((FIXTURES / "field_secrets.json").read_text())
# the trial corpora, made at run time: prompts, tool output and thinking
TRIAL_SECRETS = [x for name in TRIAL_CORPORA for x in build_trial(name)[0]]
TRIAL_LOOKALIKES = [x for name in TRIAL_CORPORA for x in build_trial(name)[1]]
FIELD_LOOKALIKES: list[dict[str, str]] = json.loads(
    (FIXTURES / "field_lookalikes.json").read_text()
)

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
    ("SLACK_TOKEN=abcd1234efgh", "password", "abcd1234efgh"),
    ('access_token="ya29.a0AfH6SMBx9kQ"', "password", "ya29.a0AfH6SMBx9kQ"),
    # "İ" lowercases to two characters: the slower, position-safe search is used
    ("İstanbul deploy: DEPLOY_TOKEN=9f8e7d6c5b4a", "password", "9f8e7d6c5b4a"),
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
    '"PWD": "/home/ana/project", "OLDPWD": "/home/ana"',
    "  PWD: '/Users/maciej',",
    "DB_PASSWORD_FILE=/run/secrets/db_password",
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


# -- the labelled corpus (tests/fixtures/secrets, written by make_corpus.py) ---------------------


def _pieces(secret: str, width: int = 16) -> set[str]:
    """Every ``width``-character window of each line of ``secret`` (a short line whole).

    A secret leaks when any of these survives: a window catches a half-redacted key too.
    """
    out: set[str] = set()
    for line in secret.splitlines():
        line = line.strip()
        if len(line) <= width:
            out.add(line)
        else:
            out.update(line[i : i + width] for i in range(len(line) - width + 1))
    return {p for p in out if len(p) >= 6}


def _leaks(secret: str, text: str) -> list[str]:
    return sorted(p for p in _pieces(secret) if p in text)


def test_corpus_is_as_large_and_varied_as_promised() -> None:
    kinds = {s["kind"] for s in CORPUS_SECRETS}
    assert len(CORPUS_SECRETS) >= 40
    assert len(kinds) >= 12
    assert len(LOOKALIKES) >= 40
    # every own rule is exercised by a secret of this corpus, of the field corpus or of the trial
    # corpora (whose kinds are families: tests/pipeline/test_redact_field.py and
    # test_redact_trial.py check them), so none goes untested
    marked = {f"[REDACTED:{r.marker}]" for r in RULES.values()}
    prose = json.loads((FIXTURES / "prose.json").read_text())["said"]
    texts = [redact(x["text"]) for x in [*CORPUS_SECRETS, *FIELD_SECRETS, *prose, *TRIAL_SECRETS]]
    seen = {m for t in texts for m in marked if m in t}
    assert seen == marked
    assert kinds <= {r.marker for r in RULES.values()}
    assert {s["where"] for s in CORPUS_SECRETS} == {
        "user",
        "assistant",
        "thinking",
        "tool_input",
        "tool_output",
        "title",
    }


@pytest.mark.parametrize("item", CORPUS_SECRETS, ids=[s["id"] for s in CORPUS_SECRETS])
def test_every_corpus_secret_is_redacted_with_its_kind(item: dict[str, str]) -> None:
    assert _leaks(item["secret"], item["text"])  # the secret is really in the text
    out = redact(item["text"])
    assert _leaks(item["secret"], out) == []
    assert f"[REDACTED:{item['kind']}]" in out


@pytest.mark.parametrize("item", LOOKALIKES, ids=[x["id"] for x in LOOKALIKES])
def test_no_corpus_lookalike_is_touched(item: dict[str, str]) -> None:
    assert redact(item["text"]) == item["text"]


def test_redaction_is_idempotent_on_the_corpus() -> None:
    for item in CORPUS_SECRETS:
        once = redact(item["text"])
        assert redact(once) == once, item["id"]


# -- modes ---------------------------------------------------------------------------------------


def test_modes_come_from_one_registry_and_unknown_names_are_refused() -> None:
    assert REDACT_CHOICES == tuple(REDACT_MODES) == ("all", "tool-output", "none")
    assert StoreConfig().redact == "all"
    with pytest.raises(ValueError, match="all, tool-output, none"):
        redact_mode("everything")
    with pytest.raises(ValueError, match="all, tool-output, none"):
        StoreConfig(redact="everything")


def _corpus_with_a_key_everywhere() -> tuple[Corpus, str]:
    key = "AKIAQWERTYUIOPASDFGH"
    c = make_corpus(
        {
            "c": [
                ("user", f"my key is {key}"),
                ("assistant", f"do not paste {key}"),
                ("tool", [BlockRow("tool_result", f"AWS_ACCESS_KEY_ID={key}")]),
            ]
        }
    )
    conversations = c.conversations.with_columns(pl.lit(f"Leaked {key}").alias("title"))
    return replace(c, conversations=conversations), key


@pytest.mark.parametrize(
    ("mode", "redacted_blocks", "title_redacted"),
    [
        ("all", [True, True, True], True),
        ("tool-output", [False, False, True], False),
        ("none", [False, False, False], False),
    ],
)
def test_each_mode_covers_its_texts(
    mode: str, redacted_blocks: list[bool], title_redacted: bool
) -> None:
    c, key = _corpus_with_a_key_everywhere()
    out = redact_corpus(c, mode)
    assert [key not in t for t in out.blocks["text"]] == redacted_blocks
    assert (key not in out.conversations["title"][0]) is title_redacted
    assert key in c.blocks["text"][0]  # the input is not changed
    assert key in c.conversations["title"][0]


# -- end to end: nothing secret reaches the store -------------------------------------------------


def _claude_code_session(item: dict[str, str]) -> list[dict[str, Any]]:
    """A small Claude Code session that carries ``item['text']`` in the place ``where`` says."""
    sid = item["id"]
    t = "2026-01-01T10:00:{:02d}.000Z"
    recs: list[dict[str, Any]] = []

    def line(kind: str, content: Any) -> None:
        n = len(recs)
        recs.append(
            {
                "type": kind,
                "timestamp": t.format(n),
                "sessionId": sid,
                "uuid": f"{sid}-{n}",
                "parentUuid": f"{sid}-{n - 1}" if n else None,
                "message": {"role": kind, "content": content},
            }
        )

    text, where = item["text"], item["where"]
    if where == "title":
        recs.append({"type": "summary", "summary": text, "leafUuid": f"{sid}-1"})
    line("user", text if where == "user" else "please look at the deployment")
    if where in ("assistant", "title"):
        line("assistant", [{"type": "text", "text": text if where == "assistant" else "ok"}])
    elif where == "thinking":
        line(
            "assistant",
            [
                {"type": "thinking", "thinking": text, "signature": "sig"},
                {"type": "text", "text": "Done."},
            ],
        )
    elif where in ("tool_input", "tool_output"):
        try:
            tool_input = json.loads(text) if where == "tool_input" else {"command": "cat f"}
        except ValueError:
            tool_input = {"command": text}
        line(
            "assistant",
            [{"type": "tool_use", "id": f"tu-{sid}", "name": "Bash", "input": tool_input}],
        )
        output = text if where == "tool_output" else "ok"
        line("user", [{"type": "tool_result", "tool_use_id": f"tu-{sid}", "content": output}])
        line("assistant", [{"type": "text", "text": "That worked."}])
    return recs


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("history") / "-home-u-app"
    root.mkdir()
    for item in [
        *CORPUS_SECRETS,
        *LOOKALIKES,
        *FIELD_SECRETS,
        *FIELD_LOOKALIKES,
        *TRIAL_SECRETS,
        *TRIAL_LOOKALIKES,
    ]:
        recs = _claude_code_session(item)
        (root / f"{item['id']}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return root.parent


EVERYTHING = ContentPolicy(
    thinking=True, tool_results=True, system=True, tool_call_value_chars=5000
)


def _store_text(directory: Path) -> str:
    """Every string of every parquet file, and the raw bytes of every other file, of a store."""
    parts: list[str] = []
    for f in sorted(p for p in directory.rglob("*") if p.is_file()):
        if f.suffix == ".parquet":
            parts.append(json.dumps(pl.read_parquet(f).to_dicts(), default=str))
        else:
            parts.append(f.read_bytes().decode("latin-1"))
    return "\n".join(parts)


def _cache_keys(directory: Path) -> set[bytes]:
    keys: set[bytes] = set()
    for seg in (directory / "cache").rglob("seg-*.npy"):
        keys.update(k.tobytes() for k in np.load(seg, allow_pickle=False)["key"])
    return keys


def _sha(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def test_no_secret_reaches_the_store_or_the_cache(history: Path, tmp_path: Path) -> None:
    redacted, plain = Store(tmp_path / "redacted"), Store(tmp_path / "plain")
    redacted.update([history], config=StoreConfig(policy=EVERYTHING), embedder=HashEmbedder())
    plain.update(
        [history], config=StoreConfig(policy=EVERYTHING, redact="none"), embedder=HashEmbedder()
    )
    assert redacted.manifest().config.redact == "all"
    stored, control = _store_text(redacted.directory), _store_text(plain.directory)
    assert "[REDACTED:" in stored
    for item in [*CORPUS_SECRETS, *FIELD_SECRETS, *TRIAL_SECRETS]:
        assert _leaks(item["secret"], control), item["id"]  # without redaction it is stored
        assert _leaks(item["secret"], stored) == [], item["id"]

    # the cache holds exactly the redacted texts of the embedded units: none with a secret
    embedded = [s for s, dense in redacted.strategies().items() if dense]
    units = redacted.frame("units").filter(pl.col("strategy").is_in(embedded))["text"].to_list()
    assert _cache_keys(redacted.directory) == {_sha(t) for t in units}
    secret_texts = {
        t
        for t in plain.frame("units")["text"].to_list()
        if any(_leaks(s["secret"], t) for s in [*CORPUS_SECRETS, *FIELD_SECRETS])
    }
    assert secret_texts
    assert not {_sha(t) for t in secret_texts} & _cache_keys(redacted.directory)


def test_lookalikes_and_titles_after_loading(history: Path) -> None:
    loaded = load(history)
    out = redact_corpus(loaded, "all")
    ids = {x["id"] for x in [*LOOKALIKES, *FIELD_LOOKALIKES, *TRIAL_LOOKALIKES]}
    keep = pl.col("conversation_id").is_in(sorted(ids))
    assert out.blocks.filter(keep).equals(loaded.blocks.filter(keep))
    assert out.conversations.filter(keep).equals(loaded.conversations.filter(keep))
    titled = [s for s in CORPUS_SECRETS if s["where"] == "title"]
    assert titled
    for item in titled:
        title = out.conversations.filter(pl.col("conversation_id") == item["id"])["title"].item()
        assert _leaks(item["secret"], title) == []
        assert f"[REDACTED:{item['kind']}]" in title


def test_a_change_of_mode_needs_rebuild(history: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    store.update([history], config=StoreConfig(redact="tool-output"), embedder=HashEmbedder())
    with pytest.raises(ValueError, match=r"other settings \(redact\).*--rebuild"):
        store.update([history], config=StoreConfig(), embedder=HashEmbedder())
    store.update([history], config=StoreConfig(), embedder=HashEmbedder(), rebuild=True)
    assert store.manifest().config.redact == "all"


@pytest.mark.parametrize(
    "text",
    [
        "password " + "a-" * 100_000,  # a credential word, then a long run of word boundaries
        "x.password-y " * 15_000,
        "ab+" * 60_000 + "://",
        "-----BEGIN RSA PRIVATE KEY-----\nabc " * 5_000,
    ],
    ids=["boundaries", "many-names", "long-scheme", "unterminated-pem"],
)
def test_worst_case_texts_of_the_block_limit_stay_fast(text: str) -> None:
    # 200,000 characters is the loaders' cap on a block; each takes well under 0.3 s here, and
    # took 9 s before the password rule was anchored on the credential word.
    started = time.perf_counter()
    redact(text)
    assert time.perf_counter() - started < 3.0


def test_tool_inputs_stay_valid_json_after_redaction() -> None:
    items = [x for x in [*CORPUS_SECRETS, *LOOKALIKES] if x["where"] == "tool_input"]
    assert len(items) >= 10
    for item in items:
        out = redact(item["text"])
        assert isinstance(json.loads(out), dict), item["id"]


def test_rules_version_names_the_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    from convlab.pipeline import redact
    from convlab.pipeline import redact_rules as module

    assert redact.RULES_VERSION.startswith("convlab ")
    assert redact._rules_version() == redact.RULES_VERSION
    monkeypatch.setattr(module, "RULES", {k: v for k, v in module.RULES.items() if k != "jwt"})
    assert redact._rules_version() != redact.RULES_VERSION


def test_bench_scores_are_worked_out_by_hand() -> None:
    from convlab.studies.redact_bench import corpus_scores, leaks

    secrets_ = [
        {"id": "a", "kind": "jwt", "where": "user", "secret": "abcdefghijklmnopqrst", "text": "x"},
        {"id": "b", "kind": "jwt", "where": "tool_output", "secret": "hunter2", "text": "y"},
    ]
    secrets_[0]["text"] = "t=abcdefghijklmnopqrst"
    secrets_[1]["text"] = "p=hunter2"
    looks = [{"id": "l", "kind": "uuid", "where": "user", "text": "id=42"}]
    # nothing redacted: recall 0; everything blanked: recall 1, one false positive
    none = corpus_scores(lambda t: t, secrets_, looks)
    assert (none["redacted"], none["recall"], none["false_positives"]) == (0, 0.0, 0)
    blank = corpus_scores(lambda t: "[REDACTED:jwt]", secrets_, looks)
    assert (blank["redacted"], blank["right_kind"], blank["false_positives"]) == (2, 2, 1)
    # only tool outputs covered: the user's secret stays
    tools = corpus_scores(lambda t: "", secrets_, looks, covered={"tool_output"})
    assert (tools["missed"], tools["false_positives"]) == (["a"], 0)
    # half a key is still a leak: a 16-character window survives
    assert leaks("abcdefghijklmnopqrst", "t=abcdefghijklmnop[REDACTED]") == ["abcdefghijklmnop"]
    # a marker whose rule name shares a window with the secret is not a leak
    secret = "bedrock-api-key-YmVkcm9jay5h"
    assert leaks(secret, "k=[REDACTED:aws-amazon-bedrock-api-key-short-lived]") == []
    assert leaks(secret, "k=bedrock-api-key-[REDACTED:x]") == ["bedrock-api-key-"]
