"""A store knows it is a store: the marker file written when a store is created.

``DIR/convlab-store.json`` holds the marker's format, the store's random id (32 hex digits) and
when it was made. ``convlab index`` writes into a folder only when it is a store (the marker is
there), a new folder or an empty one. Any other folder is refused with :class:`NotAStore` before
anything in it is touched, so a user's ``v2/`` folder or ``current`` symlink is never removed or
replaced. A marker is read as the store wrote it or not at all: a symlink, a FIFO, a file over
:data:`MARKER_LIMIT` bytes, or one whose format, id or time is not what :func:`claim` writes
(``"format": true``, ``-7``, ``"id": ""``, ``"created": 1e400`` or ``"abc"``) is refused in
one line. Whether the folder's versions are this store's (a marker copied from another store)
is :func:`convlab.store.owner.check_store`'s to say.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from convlab.atomic import fsync_dir

__all__ = [
    "MARKER",
    "MARKER_FORMAT",
    "MARKER_LIMIT",
    "Marker",
    "NotAStore",
    "check_folder",
    "claim",
    "marker_id",
    "read_marker",
]

MARKER = "convlab-store.json"
MARKER_FORMAT = 1
"""The marker's own format (not the versions' :data:`convlab.store.format.STORE_FORMAT`)."""
MARKER_LIMIT = 4096
"""The most bytes a marker may hold (what :func:`claim` writes is under 100)."""
_TMP = re.compile(r"^\.tmp-marker-[0-9a-f]{32}$")
_ID = re.compile(r"^[0-9a-f]{32}$")
_LAST = 1e11
"""Seconds since the epoch past which a marker's ``created`` is not a time (the year 5138)."""


class NotAStore(ValueError):
    """The folder given as a store is not one (a file, or a folder of other things)."""


@dataclass(frozen=True, slots=True)
class Marker:
    """What a store's marker says.

    Attributes:
        format: the marker's format (:data:`MARKER_FORMAT` when written by this code).
        id: the store's id (a random hex string), kept for the life of the store.
        created: when the store was created (or adopted), in seconds since the epoch.
    """

    format: int
    id: str
    created: float


def read_marker(directory: Path) -> Marker | None:
    """The marker of the store in ``directory``; None when there is none.

    Raises:
        NotAStore: the marker is a symlink or not a regular file, unreadable, over
            :data:`MARKER_LIMIT` bytes, or not a marker as this code writes them.
    """
    from convlab.errors import LoadError
    from convlab.files import read_regular

    path = directory / MARKER
    if not os.path.lexists(path):
        return None
    if os.path.islink(path):
        raise NotAStore(
            f"{path}: a symlink, not the marker this store wrote (linked from another store?); "
            "nothing was touched"
        )
    try:
        data = json.loads(read_regular(path, limit=MARKER_LIMIT))
    except LoadError as exc:
        raise NotAStore(f"{path}: {exc.reason}; remove it if {directory} is a store") from None
    except (ValueError, RecursionError) as exc:  # invalid UTF-8 or JSON
        raise NotAStore(f"{path}: not a convlab store marker ({type(exc).__name__})") from None
    return _marker(path, data)


def _marker(path: Path, data: object) -> Marker:
    """The marker ``data`` (read from ``path``) holds, each field as :func:`claim` writes it."""
    if not isinstance(data, dict):
        raise NotAStore(f"{path}: not a convlab store marker (not a JSON object)")
    fmt, ident, created = data.get("format"), data.get("id"), data.get("created")
    if isinstance(fmt, int) and not isinstance(fmt, bool) and fmt > MARKER_FORMAT:
        raise NotAStore(f"{path}: a store of a newer convlab (marker format {fmt})")
    problem = ""
    if type(fmt) is not int or fmt != MARKER_FORMAT:
        problem = f"format {fmt!r}, not {MARKER_FORMAT}"
    elif not (isinstance(ident, str) and _ID.match(ident)):
        problem = f"id {ident!r}, not 32 hex digits"
    elif not (
        isinstance(created, int | float)
        and not isinstance(created, bool)
        and math.isfinite(created)
        and 0 <= created < _LAST
    ):
        problem = f"created {created!r}, not a time"
    elif set(data) != {"format", "id", "created"}:
        problem = f"fields {', '.join(sorted(map(str, data)))}"
    if problem:
        raise NotAStore(f"{path}: not a marker this convlab wrote ({problem}); nothing was touched")
    return Marker(MARKER_FORMAT, str(ident), float(created))  # type: ignore[arg-type]


def _empty(directory: Path) -> bool:
    """No entry but the marker's temporary files (another process creating the store now).

    Each such entry must be a regular file, as :func:`claim` writes it: a folder of that name is
    something else.
    """
    return all(
        _TMP.match(name) and (directory / name).is_file() and not (directory / name).is_symlink()
        for name in os.listdir(directory)
    )


def claim(directory: Path) -> Marker:
    """Make sure ``directory`` is a store before anything is written in it; returns its marker.

    A missing or empty folder becomes a store (its marker written).

    Raises:
        NotAStore: ``directory`` is a file, or a folder that holds other things and no marker,
            or its marker is unreadable. Nothing has been touched.
    """
    marker = check_folder(directory)
    if marker is not None:
        return marker
    directory.mkdir(parents=True, exist_ok=True)
    return _write(directory)


def check_folder(directory: Path) -> Marker | None:
    """Whether ``directory`` may become or is a store, writing nothing; its marker if it has one.

    Raises:
        NotAStore: as :func:`claim` would.
    """
    if os.path.lexists(directory) and not directory.is_dir():
        raise NotAStore(f"{directory} is not a folder; give --store a new or empty folder")
    marker = read_marker(directory) if directory.is_dir() else None
    if marker is None and directory.is_dir() and not _empty(directory):
        raise NotAStore(
            f"{directory} is not empty and is not a convlab store (no {MARKER}); "
            "give --store a new or empty folder"
        )
    return marker


def _write(directory: Path) -> Marker:
    """Write the marker whole, never over another one (two first runs agree on one id)."""
    marker = Marker(MARKER_FORMAT, uuid.uuid4().hex, time.time())
    text = json.dumps({"format": marker.format, "id": marker.id, "created": marker.created})
    tmp = directory / f".tmp-marker-{uuid.uuid4().hex}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(FileExistsError):  # another process's marker won
            os.link(tmp, directory / MARKER)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(directory)
    found = read_marker(directory)
    if found is None:  # pragma: no cover - removed between the link and the read
        raise NotAStore(f"{directory / MARKER}: vanished while the store was created")
    return found


def marker_id(directory: Path) -> str:
    """The id in the marker of the store in ``directory``.

    Raises:
        NotAStore: no marker, or one :func:`read_marker` refuses.
    """
    marker = read_marker(directory)
    if marker is None:
        raise NotAStore(f"{directory}: no store marker; run `convlab index` to make one")
    return marker.id
