"""A store knows it is a store: the marker file written when a store is created.

``DIR/convlab-store.json`` holds the marker's format and the store's id. ``convlab index`` writes
into a folder only when it is a store (the marker is there), a new folder or an empty one. Any
other folder is refused with :class:`NotAStore` before anything in it is touched, so a user's
``v2/`` folder or ``current`` symlink is never removed or replaced.
"""

from __future__ import annotations

import contextlib
import json
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
    "Marker",
    "NotAStore",
    "check_folder",
    "claim",
    "is_store",
    "read_marker",
]

MARKER = "convlab-store.json"
MARKER_FORMAT = 1
"""The marker's own format (not the versions' :data:`convlab.store.format.STORE_FORMAT`)."""
_TMP = re.compile(r"^\.tmp-marker-[0-9a-f]{32}$")


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
        NotAStore: the marker is not a regular file, unreadable, or not a marker of a format
            this code knows.
    """
    from convlab.errors import LoadError
    from convlab.files import MANIFEST, read_regular

    path = directory / MARKER
    if not os.path.lexists(path):
        return None
    try:
        data = json.loads(read_regular(path, limit=MANIFEST))
    except LoadError as exc:
        raise NotAStore(f"{path}: {exc.reason}; remove it if {directory} is a store") from None
    except ValueError as exc:  # invalid UTF-8 or JSON
        raise NotAStore(f"{path}: not a convlab store marker ({type(exc).__name__})") from None
    if not (
        isinstance(data, dict)
        and isinstance(data.get("format"), int)
        and isinstance(data.get("id"), str)
    ):
        raise NotAStore(f"{path}: not a convlab store marker (no format and id)")
    if data["format"] > MARKER_FORMAT:
        raise NotAStore(f"{path}: a store of a newer convlab (marker format {data['format']})")
    created = data.get("created")
    return Marker(int(data["format"]), data["id"], float(created) if created else 0.0)


def _empty(directory: Path) -> bool:
    """No entry but the marker's temporary files (another process creating the store now)."""
    return all(_TMP.match(name) for name in os.listdir(directory))


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


def is_store(directory: Path) -> bool:
    """Whether ``directory`` holds a readable marker (what removal of versions requires)."""
    try:
        return read_marker(directory) is not None
    except NotAStore:
        return False
