"""The exit codes of the ``convlab`` command and what an error is worth.

- 0 :data:`EXIT_OK`: success;
- 1 :data:`EXIT_NO_RESULTS`: nothing matched;
- 2 :data:`EXIT_USAGE`: a usage, input or data error (:func:`is_input_error`), one line on stderr;
- 3 :data:`EXIT_INTERNAL`: a bug; the traceback goes to a crash file (:func:`write_crash_report`);
- 130 :data:`EXIT_INTERRUPTED` (128 + SIGINT) and 141 :data:`EXIT_BROKEN_PIPE` (128 + SIGPIPE),
  the codes a shell reports for a program stopped by those signals.
"""

from __future__ import annotations

import errno
import os
import sys
import tempfile
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_NO_RESULTS",
    "EXIT_OK",
    "EXIT_USAGE",
    "UsageError",
    "crash_dir",
    "is_input_error",
    "one_line",
    "write_atomic",
    "write_crash_report",
]

EXIT_OK, EXIT_NO_RESULTS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE
# OS errors that are the user's or the machine's business (a path, a permission, a full disk),
# reported as one line with exit 2; any other OSError is treated as a bug.
INPUT_ERRNOS = frozenset(
    {
        errno.ENOENT,
        errno.EEXIST,  # an output folder named where a file is (`--out /etc/hostname`)
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EACCES,
        errno.EPERM,
        errno.ELOOP,
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EROFS,
        errno.ENAMETOOLONG,
    }
)


class UsageError(Exception):
    """A user error: reported as one line with exit code 2."""


def is_input_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the user's or the data's fault (exit 2) rather than a bug (exit 3)."""
    if isinstance(exc, UsageError | FileNotFoundError | NotADirectoryError | IsADirectoryError):
        return True  # a missing store or path, with or without an errno
    if isinstance(exc, OSError):
        return exc.errno in INPUT_ERRNOS
    try:
        from convlab.embed.cache import CacheDamaged
        from convlab.embed.device import DeviceUnavailable
        from convlab.errors import LoadError, UnfitIndex
        from convlab.pipeline.gitleaks_source import GitleaksUnusable
        from convlab.store import NotAStore, StoreDamaged, StoreFull, StoreLocked, StoreMismatch
    except ImportError:  # the error being judged may be this very import failing: a bug
        return False
    store_errors = NotAStore | StoreDamaged | StoreFull | StoreLocked | StoreMismatch
    data_errors = LoadError | UnfitIndex | CacheDamaged | DeviceUnavailable | GitleaksUnusable
    return isinstance(exc, data_errors | store_errors)


def one_line(exc: BaseException, *, type_name: bool = False) -> str:
    """The message of ``exc`` on one line (its type's name when it has none), terminal-safe.

    Control characters, bidirectional overrides and lone surrogates (a file name that is not
    UTF-8) are written as escapes, so a hostile path or name in an error cannot reach the terminal
    raw.
    """
    from convlab.systems.names import escaped

    text = escaped(" ".join(str(exc).split())) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type_name else text


def crash_dir() -> Path:
    """Where crash reports go: ``$XDG_CACHE_HOME/convlab``, else ``~/.cache/convlab``."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "convlab"


def write_crash_report(exc: BaseException, argv: Sequence[str] | None) -> Path:
    """Write the traceback to a new crash file (atomically) and return its path."""
    from convlab._version import __version__

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    text = (
        f"convlab {__version__}, Python {sys.version.split()[0]}\n"
        f"argv: {list(sys.argv[1:] if argv is None else argv)!r}\n\n"
        + "".join(traceback.format_exception(exc))
    )
    for folder in (crash_dir(), Path(tempfile.gettempdir())):
        path = folder / f"crash-{stamp}-{os.getpid()}.txt"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)
        except OSError:
            continue
        return path
    return Path("(nowhere: neither the cache nor the temp dir is writable)")


def write_atomic(path: Path, text: str, *, mode: int = 0o600) -> None:
    """Write ``text`` to a temporary name beside ``path``, fsync, then rename it into place.

    The file is created with ``mode`` (owner only by default: a traceback can quote a query).
    """
    from convlab.atomic import write_text_atomic

    write_text_atomic(path, text, mode=mode)
