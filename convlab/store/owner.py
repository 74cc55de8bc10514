"""What a store owns: the versions that record its marker's id, and nothing else.

A store is what the store itself wrote: its marker holds a random id (:mod:`convlab.store.marker`),
and every version's manifest records that id and the version's own name
(:attr:`convlab.store.format.StoreManifest.store_id`, ``version``). Before anything is written,
:func:`check_store` refuses a folder whose marker is not the one its versions record (a marker
copied from another store into a folder of other things); before a version is removed,
:func:`not_ours` checks that it is one of the store's own, whole: its manifest (checksum, store
id, name), no file it does not list, and its files' sizes and sampled content. A temporary
version is removed only when it holds the store's id in :data:`OWNER` (written first).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from convlab.store.errors import StoreDamaged, StoreOutdated
from convlab.store.manifest import MANIFEST, READERS, check_files, read_manifest
from convlab.store.marker import MARKER, Marker, NotAStore, check_folder

__all__ = [
    "LEFTOVER",
    "OWNER",
    "TEMPORARY",
    "VERSION",
    "check_store",
    "not_ours",
    "own_versions",
    "stamped",
]

VERSION = re.compile(r"^v\d+$")
TEMPORARY = re.compile(r"^\.tmp-v\d+$")
LEFTOVER = re.compile(r"^\.current-v\d+$")
OWNER = ".owner"
"""The first file of a version being written: the store's id (how a killed run's temporary
version is told from a folder of the same name that the store did not write)."""
_WRITTEN = {
    *(f"{n}.parquet" for n in ("conversations", "messages", "turns", "chunks", "units")),
    "index",
    "bm25",
    "views",
    READERS,
    MANIFEST,
    OWNER,
}
"""The names a version holds at its top."""
_SAVING = re.compile(r"^\.(?:index|bm25)\.(?:tmp|old)-[0-9a-f]{32}$")
"""An index being saved at the top of a version (a run killed inside ``VectorIndex.save``)."""


def _recorded(version: Path, store_id: str) -> bool:
    """Whether ``version``'s manifest reads and records this store's id and its own name."""
    if version.is_symlink() or not version.is_dir():
        return False
    try:
        manifest = read_manifest(version.parent, version)
    except (StoreDamaged, StoreOutdated, OSError):
        return False
    return manifest.store_id == store_id and manifest.version == version.name


def own_versions(directory: Path, store_id: str) -> list[str]:
    """The versions in ``directory`` whose manifests record ``store_id`` (and their own name)."""
    return sorted(
        p.name for p in directory.iterdir() if VERSION.match(p.name) and _recorded(p, store_id)
    )


def not_ours(version: Path, store_id: str) -> str:
    """Why ``version`` may not be removed as one of the store's own versions ('' when it may).

    It must be a folder (not a link) whose manifest reads, records ``store_id`` and its own
    name, holding no file its manifest does not list, each listed file of the recorded size and
    its content (small files whole, sampled blocks of large ones) matching its SHA-256.
    """
    if version.is_symlink() or not version.is_dir():
        return "not a folder"
    try:
        manifest = read_manifest(version.parent, version)
    except StoreOutdated:
        return "a version of an older format, which records no store id"
    except (StoreDamaged, OSError) as exc:
        return f"its manifest does not check out ({str(exc).split('; run')[0]})"
    if manifest.store_id != store_id:
        return "its manifest records another store"
    if manifest.version != version.name:
        return f"its manifest names {manifest.version}"
    listed = {*manifest.version_files, MANIFEST, READERS}
    for p in version.rglob("*"):
        rel = p.relative_to(version).as_posix()
        if p.is_symlink() or not (p.is_dir() or p.is_file()) or (p.is_file() and rel not in listed):
            return f"it holds {rel}, which its manifest does not list"
    try:
        check_files(version.parent, version, manifest, check="sample")
    except StoreDamaged as exc:
        return f"its content does not match its manifest ({str(exc).split('; run')[0]})"
    return ""


def stamped(tmp: Path, store_id: str) -> bool:
    """Whether ``tmp`` is a temporary version this store began.

    Its :data:`OWNER` file holds ``store_id``, and it holds nothing but the names a version holds.
    """
    from convlab.errors import LoadError
    from convlab.files import read_regular

    if tmp.is_symlink() or not tmp.is_dir():
        return False
    owner = tmp / OWNER
    if owner.is_symlink():
        return False
    try:
        ok = read_regular(owner, limit=256).decode("ascii", "replace").strip() == store_id
    except LoadError:
        return False
    return ok and all(name in _WRITTEN or _SAVING.match(name) for name in os.listdir(tmp))


def check_store(directory: Path) -> Marker | None:
    """Whether ``directory`` may become or is a store, writing nothing; its marker if it has one.

    Beyond :func:`convlab.store.marker.check_folder`: a marked folder's ``current`` must be a
    symlink, its ``.lock`` empty, its live version's manifest (where it reads) must record the
    marker's id, and in a store with no live version every ``v<digits>`` folder must be one of
    its own versions. So a marker copied (or forged) into a folder of other things is refused.

    Raises:
        NotAStore: one line naming what is not the store's; nothing has been touched.
    """
    marker = check_folder(directory)
    if marker is None:
        return None
    hint = f"is {directory / MARKER} copied from another store? nothing was touched"
    current, lock = directory / "current", directory / ".lock"
    if os.path.lexists(current) and not current.is_symlink():
        raise NotAStore(f"{current}: not the symlink a store makes; {hint}")
    if lock.is_file() and not lock.is_symlink() and lock.stat().st_size:
        raise NotAStore(f"{lock}: not the empty lock file a store makes; {hint}")
    if current.is_symlink():
        live = current.resolve()
        try:
            manifest = read_manifest(directory, live)
        except (StoreDamaged, StoreOutdated, OSError):
            return marker  # a damaged live version is repaired, an outdated one refused later
        if manifest.store_id != marker.id:
            raise NotAStore(
                f"{directory / MARKER}: store id {marker.id}, but its live version {live.name} "
                f"records {manifest.store_id}; {hint}"
            )
        return marker
    for p in sorted(directory.iterdir()):
        if VERSION.match(p.name) and not _recorded(p, marker.id):
            raise NotAStore(
                f"{p}: not a version of this store (no manifest recording its id); {hint}"
            )
    return marker
