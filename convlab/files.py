"""Finding and opening input files safely: only regular files are ever opened, within a size.

A history folder can hold things a reader must not open: a FIFO (opening it blocks until a
writer comes, forever), a symlink to ``/dev/zero`` (reading it never ends), other devices and
sockets, symlink loops, dangling symlinks, files this user may not read, and directories reached
twice through symlinks. :func:`walk` finds every file under a root and says, for each one it will
not read, why (a :class:`Found` with a ``problem``), judging from ``stat`` alone; nothing is
opened. :func:`open_regular` checks again when a reader opens a file, since the file may have
been replaced in between, and raises :class:`LoadError` naming the file instead of blocking.

Both :func:`convlab.load` and the store's indexer (``convlab index``) walk with :func:`walk`, so
the library and the command skip and report the same files.

Every other file the package reads (labelled data, queries, qrels, judgments, TREC runs,
experiment files, configs and manifests) is read with :func:`read_regular` or
:func:`read_text_regular` under a :class:`Limit` sized for its kind (:data:`CONFIG`,
:data:`TABLE`, :data:`DATASET`): a file over its limit is refused, naming it and the limit,
before a byte is read.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

from convlab.errors import LoadError

__all__ = [
    "CHUNK",
    "CONFIG",
    "DATASET",
    "MANIFEST",
    "STORE_MANIFEST",
    "TABLE",
    "Found",
    "Limit",
    "check",
    "open_regular",
    "read_regular",
    "read_text_regular",
    "walk",
]

_MiB = 1 << 20
CHUNK = 16 * _MiB
"""The most :func:`read_regular` asks of a file at once under a limit."""


class Limit(NamedTuple):
    """The most bytes a kind of input file may hold, and the kind's name for error messages."""

    size: int
    what: str = "this file"

    def describe(self) -> str:
        """The limit in words, e.g. ``'the 16 MiB limit for a config file'``."""
        return f"the {_human(self.size)} limit for {self.what}"


CONFIG = Limit(16 * _MiB, "a config file")
"""Experiment files, ``sources.json``, thresholds and run-folder manifests."""
MANIFEST = Limit(256 << 10, "an index manifest")
"""An index's ``manifest.json`` (a few hundred bytes) and a store's marker."""
STORE_MANIFEST = Limit(256 * _MiB, "a store manifest")
"""A store version's ``manifest.json``: a record per transcript file and per conversation
(about 400 bytes each: 256 MiB is over 600,000 files) and the block digests of its files."""
TABLE = Limit(1024 * _MiB, "a table file")
"""Queries, qrels, judgments and TREC run files (lines of text)."""
DATASET = Limit(16 * 1024 * _MiB, "a labelled data file")
"""A whole-file JSON data set read at once (LoCoMo, LongMemEval: its M variant is 2.7 GB)."""


def _human(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", _MiB), ("KiB", 1 << 10)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} bytes"


def _limit(limit: Limit | int | None) -> Limit | None:
    return Limit(limit) if isinstance(limit, int) else limit


_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class Found(NamedTuple):
    """A path met by :func:`walk`.

    Attributes:
        path: the path as walked (under the root, symlinks not resolved).
        problem: why it is not read (``None`` for a readable regular file).
    """

    path: Path
    problem: str | None = None


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return f"{name}, not a regular file"
    return "not a regular file"


def _stat(path: Path) -> tuple[os.stat_result | None, str | None]:
    """``os.stat`` (following symlinks) of ``path``, or the problem that stops it."""
    try:
        return os.stat(path), None
    except FileNotFoundError:
        if os.path.islink(path):
            return None, f"a dangling symlink (to {os.readlink(path)})"
        return None, "no such file"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, "a symlink loop"
        return None, f"cannot read file ({exc.strerror})"


def check(path: str | Path) -> str | None:
    """Why ``path`` will not be read, judged without opening it; ``None`` when it can be.

    Example:
        >>> check("/dev/zero")
        'a character device, not a regular file'
    """
    p = Path(path)
    st, problem = _stat(p)
    if st is None:
        return problem
    if stat.S_ISDIR(st.st_mode):
        return "a directory"
    if not stat.S_ISREG(st.st_mode):
        return _kind(st.st_mode)
    if not os.access(p, os.R_OK):
        return "cannot read file (Permission denied)"
    return None


def walk(root: str | Path) -> Iterator[Found]:
    """Every file under ``root`` in sorted order, with the reason for each one not to be read.

    Names starting with a dot are passed over (hidden files and folders: caches, locks). Symlinks
    to directories are followed, each real directory once: one reached again (a symlink loop,
    or a second link to it) is reported, as is a regular file reached a second time through a
    link. A directory that cannot be listed is reported. ``root`` itself may be a file.

    Example:
        >>> [f.problem for f in walk("/dev/zero")]
        ['a character device, not a regular file']
    """
    top = Path(root)
    st, problem = _stat(top)
    if st is None or not stat.S_ISDIR(st.st_mode):
        yield Found(top, problem if st is None else check(top))
        return
    seen_dirs: dict[tuple[int, int], Path] = {(st.st_dev, st.st_ino): top}
    seen_files: dict[tuple[int, int], Path] = {}
    stack = [top]
    while stack:
        directory = stack.pop()
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:
            yield Found(directory, f"cannot list directory ({exc.strerror})")
            continue
        subdirs: list[Path] = []
        for name in names:
            if name.startswith("."):
                continue
            path = directory / name
            st, problem = _stat(path)
            if st is None:
                yield Found(path, problem)
                continue
            key = (st.st_dev, st.st_ino)
            if stat.S_ISDIR(st.st_mode):
                if key in seen_dirs:
                    yield Found(path, f"a directory walked already, as {seen_dirs[key]}")
                else:
                    seen_dirs[key] = path
                    subdirs.append(path)
            elif not stat.S_ISREG(st.st_mode):
                yield Found(path, _kind(st.st_mode))
            elif key in seen_files:
                yield Found(path, f"the same file as {seen_files[key]}")
            else:
                seen_files[key] = path
                readable = os.access(path, os.R_OK)
                yield Found(path, None if readable else "cannot read file (Permission denied)")
        stack.extend(reversed(subdirs))


def open_regular(path: str | Path, *, limit: Limit | int | None = None) -> BinaryIO:
    """Open a regular file for reading in binary, never a FIFO, device or socket.

    The file is checked with ``stat`` before it is opened (so a device is never opened) and
    again with ``fstat`` after (in case it was replaced in between); the open itself does not
    block (``O_NONBLOCK``), so a FIFO swapped in at the last moment cannot hang the reader.

    Args:
        path: the file.
        limit: the most bytes the file may hold (a :class:`Limit` or a number of bytes);
            ``None`` for no limit (a reader that streams).

    Raises:
        LoadError: naming the file, with line 0, when it is not a readable regular file or is
            over ``limit``.
    """
    p = Path(path)
    problem = check(p)
    if problem is not None:
        raise LoadError(p, 0, problem)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(p, flags)
    except OSError as exc:
        raise LoadError(p, 0, f"cannot read file ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LoadError(p, 0, _kind(st.st_mode))
        bound = _limit(limit)
        if bound is not None and st.st_size > bound.size:
            raise _too_big(p, bound, st.st_size)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _too_big(path: Path, limit: Limit, size: int | None) -> LoadError:
    has = f" (it holds {_human(size)})" if size is not None else ""
    return LoadError(path, 0, f"larger than {limit.describe()}{has}")


def read_regular(path: str | Path, *, limit: Limit | int | None = None) -> bytes:
    """The bytes of a regular file (see :func:`open_regular`), at most ``limit`` of them.

    A file that grows past ``limit`` while it is read (or whose ``stat`` size lies, as files in
    ``/proc`` do) is refused too: at most ``limit + 1`` bytes are ever read. Nothing is reserved
    for the limit: the file is read in chunks of at most :data:`CHUNK` bytes, so memory follows
    what the file holds (a 16 GiB limit costs nothing for a 1 kB file): first the size ``stat``
    gives (already checked against the limit), then chunks for what it did not tell.

    Raises:
        LoadError: naming the file (line 0): not a readable regular file, or over ``limit``.

    Example:
        >>> read_regular("/dev/zero", limit=CONFIG)
        Traceback (most recent call last):
        ...
        convlab.errors.LoadError: /dev/zero:0: a character device, not a regular file
    """
    bound = _limit(limit)
    with open_regular(path, limit=bound) as fh:
        if bound is None:
            return fh.read()
        size = os.fstat(fh.fileno()).st_size
        parts = [fh.read(min(size, bound.size) + 1)]  # +1: a file that grew shows it
        read = len(parts[0])
        while read <= bound.size and parts[-1]:
            parts.append(fh.read(min(CHUNK, bound.size + 1 - read)))
            read += len(parts[-1])
    if read > bound.size:
        raise _too_big(Path(path), bound, None)
    return parts[0] if len(parts) == 1 or not any(parts[1:]) else b"".join(parts)


def read_text_regular(path: str | Path, *, limit: Limit | int | None) -> str:
    """The UTF-8 text of a regular file (see :func:`read_regular`).

    Raises:
        LoadError: as :func:`read_regular`, and for invalid UTF-8, naming its line.
    """
    raw = read_regular(path, limit=limit)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise LoadError(path, line, "invalid UTF-8") from None
