"""Where convlab finds data it does not ship inside the package: the sample, LoCoMo, ``shared``.

Each look-up takes an explicit path first, then an environment variable, then the repository
checkout the package runs from (when it runs from one), and raises a ``FileNotFoundError``
naming every place it looked at when none holds the data. Nothing is downloaded.

- the bundled sample corpus: ``CONVLAB_SAMPLE``, else ``data/sample`` of the checkout;
- the ``shared`` folder (transcript samples, datasets): ``CONVLAB_SHARED``, else ``../shared``
  beside the checkout;
- LoCoMo: ``CONVLAB_DATA`` (a datasets folder holding ``locomo/locomo10.json``, or the json file
  itself), else ``datasets`` of the shared folder.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

__all__ = [
    "REPO_ROOT",
    "locomo_path",
    "path_text",
    "repo_root",
    "sample_data_path",
    "shared_dir",
    "text_path",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
"""The folder above the package: the repository checkout when running from one (an installed
package has site-packages here instead; :func:`repo_root` tells the two apart)."""


def repo_root() -> Path | None:
    """The repository checkout the package runs from, or ``None`` for an installed package.

    A checkout is recognised by its ``pyproject.toml`` beside the ``convlab`` package.
    """
    return REPO_ROOT if (REPO_ROOT / "pyproject.toml").is_file() else None


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value).expanduser() if value else None


def _given(path: str | Path | None, env: str) -> list[Path]:
    """The places a caller named: ``path``, then the variable ``env``, when set."""
    named = [Path(path).expanduser()] if path is not None else []
    from_env = _env_path(env)
    return [*named, from_env] if from_env is not None else named


def shared_dir(path: str | Path | None = None) -> Path:
    """The project's ``shared`` folder: ``path``, ``CONVLAB_SHARED`` or a checkout's ``../shared``.

    The first of those that is given is returned as it is (a caller may check for its parts);
    only when none is given and the package is not in a checkout is there nothing to return.

    Raises:
        FileNotFoundError: no path, no ``CONVLAB_SHARED`` and no checkout, saying how to set it.
    """
    given = Path(path).expanduser() if path is not None else _env_path("CONVLAB_SHARED")
    if given is not None:
        return given
    root = repo_root()
    if root is None:
        raise FileNotFoundError(
            f"no shared folder: convlab is installed (at {REPO_ROOT / 'convlab'}), not in a "
            "checkout with ../shared beside it; set CONVLAB_SHARED to the folder"
        )
    return root.parent / "shared"


def locomo_path(path: str | Path | None = None) -> Path:
    """The LoCoMo json file.

    Raises:
        FileNotFoundError: naming every place looked at, and how to point convlab at the file.
    """
    candidates = _given(path, "CONVLAB_DATA")
    with contextlib.suppress(FileNotFoundError):  # installed, no CONVLAB_SHARED: named below
        candidates.append(shared_dir() / "datasets")
    for c in candidates:
        if c.is_file():
            return c
        if (c / "locomo" / "locomo10.json").is_file():
            return c / "locomo" / "locomo10.json"
        if (c / "locomo10.json").is_file():
            return c / "locomo10.json"
    looked = ", ".join(str(c) for c in candidates) or "nowhere: no path, no CONVLAB_DATA"
    raise FileNotFoundError(
        f"LoCoMo not found (looked at {looked}); pass its path or set CONVLAB_DATA to the "
        "folder holding locomo/locomo10.json"
    )


def sample_data_path(path: str | Path | None = None) -> Path:
    """The bundled sample corpus written for convlab (``data/sample`` of the checkout).

    Looked for at ``path``, then ``CONVLAB_SAMPLE``, then the checkout's ``data/sample``; a
    folder counts when it holds ``transcripts/`` or ``queries.jsonl``.

    Raises:
        FileNotFoundError: none of those is a sample folder, naming each place looked at.
    """
    candidates = _given(path, "CONVLAB_SAMPLE")
    root = repo_root()
    if root is not None:
        candidates.append(root / "data" / "sample")
    for c in candidates:
        if (c / "transcripts").is_dir() or (c / "queries.jsonl").is_file():
            return c
    looked = ", ".join(str(c) for c in candidates) or (
        f"nowhere: convlab is installed (at {REPO_ROOT / 'convlab'}), not in a checkout"
    )
    raise FileNotFoundError(
        f"the sample corpus was not found (looked at {looked}); pass its path or set "
        "CONVLAB_SAMPLE to a folder holding transcripts/ and queries.jsonl (data/sample of a "
        "convlab checkout)"
    )


_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_NUL_BYTE = re.compile("\x00([0-9a-f]{2})")


def path_text(path: str | os.PathLike[str]) -> str:
    r"""A file's path as text a frame can hold (valid UTF-8), losslessly: see :func:`text_path`.

    A name that is not UTF-8 (``b"caf\xe9.jsonl"`` on Linux) reaches Python as a string with
    surrogate escapes, which polars cannot store. Each such byte is written as NUL and two hex
    digits; a path never holds NUL, so a UTF-8 path is unchanged and no two paths meet.

    Example:
        >>> path_text(os.fsdecode(b"/t/caf\xe9.jsonl"))
        '/t/caf\x00e9.jsonl'
        >>> path_text("/t/café.jsonl")
        '/t/café.jsonl'
    """
    text = os.fspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _ESCAPED_BYTE.sub(lambda m: f"\x00{ord(m.group()) - 0xDC00:02x}", text)
    return text


def text_path(text: str) -> Path:
    r"""The path that :func:`path_text` wrote as ``text``: it opens the file whatever its name.

    Example:
        >>> os.fsencode(text_path("/t/caf\x00e9.jsonl"))
        b'/t/caf\xe9.jsonl'
    """
    return Path(_NUL_BYTE.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), text))
