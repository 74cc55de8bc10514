"""The store's errors: each message is one line naming the file or folder and what to do."""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "StoreDamaged",
    "StoreFull",
    "StoreLocked",
    "StoreMismatch",
    "StoreOutdated",
    "damaged",
]


class StoreLocked(RuntimeError):
    """Another indexer holds the store's lock."""


class StoreMismatch(ValueError):
    """The store was built with another model or other settings (``--rebuild`` starts over)."""


class StoreOutdated(StoreMismatch):
    """The store was written by an older convlab, in a format this one no longer reads.

    The message is one line saying to run ``convlab index --rebuild``.
    """


class StoreDamaged(RuntimeError):
    """A file of the live version is missing, truncated or fails its content hash.

    The message is one line naming the file and what to do (``convlab index`` repairs it).
    """


class StoreFull(RuntimeError):
    """The disk filled up (ENOSPC) while ``index`` wrote; the previous version is intact."""


def damaged(
    store: Path, path: Path, what: str, *, rebuild: bool = False, verify: bool = False
) -> StoreDamaged:
    """The one-line error for a damaged ``path`` of the store in directory ``store``.

    ``rebuild``: the repair to name is ``convlab index --rebuild`` (the manifest, which says
    how the store was built, is what is damaged). ``verify``: found by a search's check of what
    it reads, which checks a sample of a large file: the line names ``convlab stats --verify``,
    which checks every byte, before the repair.
    """
    if verify:
        return StoreDamaged(
            f"{path}: {what}; run `convlab stats --verify --store {store}` to check every file "
            f"and `convlab index --store {store}` to repair"
        )
    if rebuild:
        return StoreDamaged(
            f"{path}: {what}; run `convlab index PATH --store {store} --rebuild` to repair"
        )
    return StoreDamaged(f"{path}: {what}; run `convlab index --store {store}` to repair")
