"""Writes that are whole or absent: a temporary name beside the target, fsync, rename, fsync dir.

Every file convlab writes for keeps (crash reports, benchmark JSON, exported models, cache
segments, store versions) goes through here or through a directory-level variant built on
:func:`fsync_dir`, so a kill at any point leaves the old file or the new one, never half of one.
"""

from __future__ import annotations

import errno
import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path

__all__ = ["disk_full", "fsync_dir", "nearly_full", "write_file_atomic", "write_text_atomic"]


def fsync_dir(path: str | Path) -> None:
    """Flush a directory's entries (a rename into it is durable after this)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_text_atomic(path: str | Path, text: str, *, mode: int = 0o644) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all; the file gets ``mode``.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "r.json"
        >>> write_text_atomic(p, "{}")
        >>> p.read_text()
        '{}'
    """
    path = Path(path)
    tmp = path.with_name(f".tmp-{uuid.uuid4().hex}-{path.name}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)


def write_file_atomic(path: str | Path, write: Callable[[Path], object]) -> None:
    """Let ``write`` make ``path`` whole or not at all, for writers that want a path of their own.

    ``write`` gets a temporary name beside ``path`` (same suffix, so a format picked by suffix
    still is) and writes the file there; it is fsynced and renamed into place.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "r.txt"
        >>> write_file_atomic(p, lambda tmp: tmp.write_text("ok"))
        >>> p.read_text()
        'ok'
    """
    path = Path(path)
    tmp = path.with_name(f".tmp-{uuid.uuid4().hex}-{path.name}")
    try:
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)


_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_FULL_TEXTS = ("no space left on device", "disk quota exceeded", "os error 28", "errno 28")
_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")
"""numpy's ``tofile`` on a full disk: ``OSError("400000 requested and 262128 written")``."""


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) says the disk or quota is full.

    Writers report a full disk in their own ways (seen on a full 2 MiB tmpfs): Python raises
    ``OSError(ENOSPC)``, numpy's ``np.save`` an ``OSError`` without errno (``400000 requested
    and 262128 written``), polars a ``ComputeError`` whose text ends ``(os error 28)``, FAISS a
    ``RuntimeError`` quoting ``strerror``; all of them are recognised.

    Example:
        >>> disk_full(OSError(errno.ENOSPC, "No space left on device"))
        True
        >>> disk_full(ValueError("no"))
        False
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _FULL_ERRNOS:
            return True
        text = str(current).lower()
        if any(t in text for t in _FULL_TEXTS) or _SHORT_WRITE.search(text):
            return True
        current = current.__cause__ or current.__context__
    return False


NEARLY_FULL = 1 << 20
"""Free bytes under which a failed write is taken for a full disk (see :func:`nearly_full`)."""


def nearly_full(path: str | Path) -> bool:
    """Whether the file system holding ``path`` has less than :data:`NEARLY_FULL` bytes free.

    For writers that lose the errno of a full disk (polars, seen on a full tmpfs, raised
    ``ComputeError: parquet: File out of specification: Invalid thrift: transport error``): a
    write that failed on a file system this full failed for want of space.
    """
    try:
        st = os.statvfs(path)
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        return False
    return st.f_bavail * st.f_frsize < NEARLY_FULL
