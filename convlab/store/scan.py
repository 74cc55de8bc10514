"""Which transcript files an update reads: changed by size, mtime or content, gone, or stale.

:func:`scan` walks the roots against the files a version recorded (:class:`FileRecord`), hashing
only files whose size or mtime changed; :func:`record_conversations` notes in each changed
file's record what it held (:mod:`convlab.store.history` then decides, conversation by
conversation, what an update keeps).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import polars as pl

from convlab.loaders import Corpus, LoadError
from convlab.loaders.registry import FORMATS
from convlab.paths import path_text
from convlab.store.config import IndexSummary
from convlab.store.format import FileRecord

__all__ = ["Files", "Scan", "candidate_files", "record_conversations", "scan"]

Files = dict[str, FileRecord]
"""A manifest's ``files``: path -> :class:`FileRecord`."""


@dataclass(slots=True)
class Scan:
    """What the walk of the roots found against the files indexed before."""

    files: Files = field(default_factory=dict)
    changed: list[Path] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    stale: set[str] = field(default_factory=set)


def scan(roots: list[Path], old_files: Files, summary: IndexSummary) -> Scan:
    """Which files changed (size, mtime, then content hash), which are gone, which are stale.

    A conversation spread over several files (a resumed session) is re-read whole: the other
    files of a stale conversation are added to ``changed``.
    """
    found = Scan()
    present = [r for r in roots if os.path.lexists(r)]  # a root gone (--watch) holds no file
    for f in list(candidate_files(present, summary.skipped)):
        try:  # the file may have gone or changed kind since the walk: a skip, not a crash
            st = f.stat()
            rec = old_files.get(str(f))
            if rec and rec.size == st.st_size and rec.mtime_ns == st.st_mtime_ns:
                found.files[str(f)] = rec
                summary.files_unchanged += 1
                continue
            sha = file_sha256(f)
        except LoadError as exc:
            summary.skipped.append((str(f), 0, exc.reason))
            continue
        except OSError as exc:
            summary.skipped.append((str(f), 0, f"cannot read file ({exc.strerror or exc})"))
            continue
        if rec and rec.sha256 == sha:
            found.files[str(f)] = msgspec.structs.replace(rec, mtime_ns=st.st_mtime_ns)
            summary.files_unchanged += 1
            continue
        found.files[str(f)] = FileRecord(size=st.st_size, mtime_ns=st.st_mtime_ns, sha256=sha)
        found.changed.append(f)
    # files indexed before, under these roots, and gone now
    found.gone = [
        p
        for p in old_files
        if p not in found.files and any(Path(p).is_relative_to(r) or Path(p) == r for r in roots)
    ]
    found.files.update(
        {p: rec for p, rec in old_files.items() if p not in found.files and p not in found.gone}
    )
    # conversations whose files changed or are gone are re-derived from the changed files
    for p in [*map(str, found.changed), *found.gone]:
        if p in old_files:
            found.stale.update(old_files[p].conversations)
    by_conv: dict[str, set[str]] = {}
    for p, rec in old_files.items():
        for c in rec.conversations:
            by_conv.setdefault(c, set()).add(p)
    siblings = {
        Path(p)
        for c in found.stale
        for p in by_conv.get(c, ())
        if p in found.files and Path(p) not in found.changed and Path(p).exists()
    }
    found.changed.extend(sorted(siblings))
    return found


def record_conversations(scan: Scan, corpus: Corpus) -> None:
    """Note in each changed file's record its conversations and how many records were skipped."""
    skipped_by_file: dict[str, int] = {}
    for path in corpus.report.skipped["source_path"]:
        skipped_by_file[path] = skipped_by_file.get(path, 0) + 1
    for f in scan.changed:
        stored = path_text(f)  # how the frames hold the name (a non-UTF-8 one escaped)
        rec = scan.files[str(f)]
        rec.conversations = sorted(
            corpus.conversations.filter(pl.col("source_path") == stored)[
                "conversation_id"
            ].to_list()
        )
        rec.skipped = skipped_by_file.get(stored, 0)


def candidate_files(
    roots: Iterable[Path], skipped: list[tuple[str, int, str]] | None = None
) -> Iterable[Path]:
    """The regular, readable files under ``roots`` (absolute), companions left out.

    A file keeps the path it was found at, symlinks included (hits show the path that was
    indexed, not a link's target); a file reached twice (two links to it) is yielded once.

    Walked by the loaders' :func:`convlab.files.walk`, so ``convlab index`` skips what
    ``load()`` skips: FIFOs, devices and sockets are never opened (hashing one would block or
    never end), dangling and looping symlinks and unreadable files do not abort the index.
    Each such file is appended to ``skipped`` as ``(path, 0, reason)``.
    """
    from convlab.files import walk

    seen: set[Path] = set()
    for root in roots:
        for path, problem in walk(root):
            if problem is not None:
                if skipped is not None:
                    skipped.append((str(path), 0, problem))
                continue
            if path != root and any(r.companion(path) for _, r in FORMATS.items()):
                continue
            target = path.resolve()
            if target not in seen:
                seen.add(target)
                yield Path(os.path.abspath(path))


def file_sha256(path: Path) -> str:
    """The SHA-256 of a transcript file, opened as a regular file only (never blocks on a FIFO).

    Raises:
        LoadError: the file is no longer a readable regular file.
    """
    from convlab.files import open_regular

    h = hashlib.sha256()
    with open_regular(path) as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()
