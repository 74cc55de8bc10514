"""Versions of a store on disk: written whole, switched by one rename, removed when unread.

A version is written beside the live one, pinned by readers with a shared lock, and removed
only when no reader holds it.

A version is a directory ``v<N>``; ``current`` is a symlink to the live one. A version is written
as ``.tmp-v<N>``, flushed (:func:`fsync_tree`), renamed, and made live by
replacing ``current`` with a symlink made as ``.current-v<N>``: a run killed at any point leaves
the previous version live, and the leftovers are removed by the next run. Only what the store
wrote is ever removed (:mod:`convlab.store.owner`): the versions the live manifest lists, each
checked to be the store's own and whole, temporary versions holding the store's id, and links.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

import msgspec
import polars as pl

from convlab.atomic import disk_full, fsync_dir, nearly_full, write_text_atomic
from convlab.store.errors import StoreDamaged, damaged
from convlab.store.format import StoreManifest, encode_manifest
from convlab.store.manifest import MANIFEST, READERS, version_files
from convlab.store.owner import LEFTOVER, OWNER, TEMPORARY, VERSION, not_ours, own_versions, stamped

if TYPE_CHECKING:
    from convlab.index import VectorIndex
    from convlab.index.bm25 import BM25Index

try:  # shared locks that keep a version in use from being deleted (POSIX)
    import fcntl
except ImportError:  # pragma: no cover - Windows: versions are deleted without checking readers
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "check_lock_file",
    "crash_point",
    "fsync_tree",
    "full_message",
    "hold_shared",
    "remove_leftovers",
    "remove_version",
    "write_manifest",
    "write_version",
]


def crash_point(name: str) -> None:
    """Kill this process with SIGKILL at a named point when ``CONVLAB_CRASH_AT`` names it.

    Used only by the crash-safety tests, which run ``convlab index`` in a subprocess.
    """
    if os.environ.get("CONVLAB_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def _open_lockable(path: Path) -> IO[bytes] | None:
    """``path`` opened for a lock when it is a regular file; None when it does not exist.

    Raises:
        StoreDamaged: ``path`` is a FIFO, a device or otherwise not a regular file (opening a
            FIFO would block, reading ``/dev/zero`` would never end).
    """
    from convlab.errors import LoadError
    from convlab.files import open_regular

    if not os.path.lexists(path):
        return None
    try:
        return open_regular(path)
    except LoadError as exc:
        if not os.path.lexists(path):  # removed meanwhile (a writer deleting its version)
            return None
        raise damaged(path.parent.parent, path, exc.reason) from None


def hold_shared(path: Path) -> IO[bytes] | None:
    """Open ``path`` and take a shared lock on it (None when it does not exist or no fcntl).

    Raises:
        StoreDamaged: ``path`` is not a regular file (a FIFO or a device is never opened).
    """
    if fcntl is None:
        return None
    fh = _open_lockable(path)
    if fh is not None:
        fcntl.flock(fh.fileno(), fcntl.LOCK_SH)
    return fh


def check_lock_file(path: Path) -> None:
    """Refuse a lock file that is there and not a regular file (a FIFO, ``/dev/zero``).

    Raises:
        StoreDamaged: one line naming the file and saying to remove it.
    """
    from convlab.files import check

    if os.path.lexists(path) and (problem := check(path)) is not None:
        raise StoreDamaged(f"{path}: {problem}; remove it (no convlab process holds it)")


def remove_version(version: Path) -> bool:
    """Delete a version unless a reader holds it; returns whether it was deleted."""
    fh = None
    readers = version / READERS
    if fcntl is not None and readers.is_file():
        try:
            fh = _open_lockable(readers)
        except StoreDamaged:  # swapped for a FIFO or a device since: no reader can hold it
            fh = None
    if fh is not None:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            return False  # pinned by a reader: the next run removes it
    try:
        (version / MANIFEST).unlink(missing_ok=True)  # first: a reader that waited sees it gone
        shutil.rmtree(version, ignore_errors=True)
    finally:
        if fh is not None:
            fh.close()
    return True


def remove_leftovers(
    directory: Path,
    keep: tuple[Path | None, ...],
    *,
    store_id: str,
    log: Callable[[str], None] = lambda _: None,
) -> None:
    """Delete what killed runs left and the versions the live manifest lists, when unread.

    Removed: ``.current-v<digits>`` symlinks; ``.tmp-v<digits>`` folders that hold the store's
    id (:func:`convlab.store.owner.stamped`); and each version the live manifest lists in
    ``previous`` (where it reads and records ``store_id``) that is neither live nor kept, that
    no reader holds, and that checks out as the store's own (:func:`convlab.store.owner.not_ours`;
    one that does not is kept, and ``log`` says why). Paths are compared resolved on both
    sides, so a store given as a relative path, ``.`` or through a symlink never loses its live
    version. Nothing else is touched.

    Args:
        directory: the store directory.
        keep: the live version first (resolved, or None when there is none), then any other
            version to keep (the one this process reads).
        store_id: the id of the store's marker.
        log: where to say which listed version was kept and why.
    """
    if not directory.is_dir():
        return
    for p in directory.iterdir():
        if LEFTOVER.match(p.name) and p.is_symlink():
            p.unlink(missing_ok=True)
        elif TEMPORARY.match(p.name) and stamped(p, store_id):
            shutil.rmtree(p, ignore_errors=True)
    for name in _listed(keep[0], store_id):
        p = directory / name
        if not VERSION.match(name) or not os.path.lexists(p) or p.is_symlink():
            continue
        if p.resolve() in keep:
            continue
        why = not_ours(p, store_id)
        if why:
            log(f"kept {p}: {why}; remove it yourself if you do not need it")
        else:
            remove_version(p)


def _listed(live: Path | None, store_id: str) -> list[str]:
    """The versions the live manifest lists as the store's others (none when it does not read)."""
    from convlab.store.errors import StoreOutdated
    from convlab.store.manifest import read_manifest

    if live is None:
        return []
    try:
        manifest = read_manifest(live.parent, live)
    except (StoreDamaged, StoreOutdated, OSError):
        return []  # a damaged or outdated live version lists nothing to remove
    if manifest.store_id != store_id or manifest.version != live.name:
        return []
    return manifest.previous


def fsync_tree(path: Path) -> None:
    """Flush every file under ``path``, then every directory (deepest first), then ``path``."""
    if not path.is_dir():
        return
    dirs = []
    for p in path.rglob("*"):
        if p.is_symlink():
            continue
        if p.is_file():
            with p.open("rb") as fh:
                os.fsync(fh.fileno())
        elif p.is_dir():
            dirs.append(p)
    for d in sorted(dirs, key=lambda d: len(d.parts), reverse=True):
        fsync_dir(d)
    fsync_dir(path)


def write_version(
    directory: Path,
    manifest: StoreManifest,
    frames: dict[str, pl.DataFrame],
    index: VectorIndex,
    bm25: BM25Index | None,
    views: Mapping[str, tuple[VectorIndex | None, BM25Index | None]] | None = None,
) -> Path:
    """Write a new version whole, then make it live; returns its directory.

    ``index`` and ``bm25`` are the first strategy's (``index/``, ``bm25/``); ``views`` the
    other strategies' (``views/<strategy>/index``, ``views/<strategy>/bm25``; an index of None
    for a strategy searched by BM25 alone).

    The manifest gets its ``version`` (the new folder's name), ``previous`` (the versions on
    disk that record the store's id: :func:`convlab.store.owner.own_versions`),
    ``version_files`` (size and digest of every file written) and its checksum; the temporary
    folder's first file is :data:`convlab.store.owner.OWNER`. Crash points
    (``CONVLAB_CRASH_AT``): ``during_write``, ``before_switch``, ``after_switch``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    name = f"v{time.time_ns()}"
    tmp = directory / f".tmp-{name}"
    tmp.mkdir()
    previous = own_versions(directory, manifest.store_id)
    manifest = msgspec.structs.replace(manifest, version=name, previous=previous)
    try:
        (tmp / OWNER).write_text(manifest.store_id + "\n")
        _write_files(tmp, manifest, frames, index, bm25, views)
    except BaseException as exc:  # a full disk, a bad write: give the space back, keep the live one
        full = isinstance(exc, Exception) and not disk_full(exc) and nearly_full(tmp)
        shutil.rmtree(tmp, ignore_errors=True)
        if full:  # a writer that lost the errno (polars: "Invalid thrift: transport error")
            raise OSError(errno.ENOSPC, " ".join(str(exc).split())[:120]) from exc
        raise
    final = directory / name
    tmp.rename(final)
    crash_point("before_switch")
    link_tmp = directory / f".current-{name}"
    link_tmp.symlink_to(name)
    os.replace(link_tmp, directory / "current")
    fsync_dir(directory)
    crash_point("after_switch")
    return final


def _write_files(
    tmp: Path,
    manifest: StoreManifest,
    frames: dict[str, pl.DataFrame],
    index: VectorIndex,
    bm25: BM25Index | None,
    views: Mapping[str, tuple[VectorIndex | None, BM25Index | None]] | None,
) -> None:
    """Write every file of a version into ``tmp`` (its manifest last) and flush them."""
    for n, f in frames.items():
        f.write_parquet(tmp / f"{n}.parquet")
    crash_point("during_write")
    index.save(tmp / "index")
    if bm25 is not None:  # None: no unit to index (bm25s cannot index an empty corpus)
        bm25.save(tmp / "bm25")
    for strategy, (view_index, view_bm25) in (views or {}).items():
        if view_index is not None:
            view_index.save(tmp / "views" / strategy / "index")
        if view_bm25 is not None:
            view_bm25.save(tmp / "views" / strategy / "bm25")
    (tmp / READERS).touch()
    _, data = encode_manifest(msgspec.structs.replace(manifest, version_files=version_files(tmp)))
    (tmp / MANIFEST).write_text(data)
    fsync_tree(tmp)


def full_message(directory: Path, live: Path | None, exc: BaseException) -> str:
    """The one line for a disk that filled up during ``index``: what failed, what is intact."""
    what = " ".join(str(exc).split())[:160] or type(exc).__name__
    kept = (
        f"the previous version {live.name} is intact and still live"
        if live is not None
        else "no version was written; the store is as it was"
    )
    return (
        f"{directory}: no space left on device ({what}); {kept}; free some space and run it again"
    )


def write_manifest(version: Path, manifest: StoreManifest) -> StoreManifest:
    """Replace a version's manifest (its checksum renewed); returns it as written."""
    sealed, data = encode_manifest(manifest)
    write_text_atomic(version / MANIFEST, data)
    return sealed
