"""A version's files: their checksums, read from its manifest, and the checks that read them.

A file's digest is the SHA-256 of its 1 MiB blocks' digests (one read of the file); files of more
than :data:`SAMPLED_BLOCKS` blocks (the index files: more than :data:`SEARCH_BLOCKS`) also keep
their block digests, so a sample of blocks can be checked without reading the whole file:
``index`` checks one before it builds on a version, ``search`` the files it reads when it opens
them (:func:`check_sample`: each file up to :data:`WHOLE_BYTES` whole, a larger one's first and
last block and a random sample), and then the blocks of the very vector rows it answers from
(:class:`RowBlocks`). Every check raises :class:`StoreDamaged` with one line naming the file and
what to do.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from convlab.store.errors import StoreDamaged, damaged
from convlab.store.format import StoreManifest, VersionFile, decode_manifest

__all__ = [
    "CHECKS",
    "CHECK_ON_INDEX",
    "FRAMES",
    "MANIFEST",
    "READERS",
    "WHOLE_BYTES",
    "RowBlocks",
    "Verified",
    "check_files",
    "check_norms",
    "check_sample",
    "read_manifest",
    "row_guard",
    "version_files",
]

MANIFEST = "manifest.json"
READERS = ".readers"
FRAMES = ("conversations", "messages", "turns", "chunks", "units")
"""The frames a version stores, one parquet file each (messages: source file and line)."""
NORM_TOLERANCE = 1e-3
"""How far from 1 a stored vector's length may be before the index counts as damaged."""
NORM_ROWS = 1024
"""Rows whose length the sampled check of every ``update`` checks."""
NORM_CHUNK = 100_000
"""Rows checked at a time (bounded memory at 1M units)."""
CHECK_ON_INDEX = "sample"
"""What every ``update`` checks of the live version before using it: ``sizes`` (what every open
checks), ``sample`` (sizes, the hash of every file up to :data:`SAMPLED_BLOCKS` blocks, and that
many random blocks of each larger file: the vectors and the FAISS file) or ``full`` (every byte).

Chosen from eval/bench_verify.py at 1M units (3.09 GB, 99% of it vectors.npy and index.faiss):
hashing every byte took 7.8 s against 0.11 s for an unchanged index; ``convlab stats --verify``
hashes every byte."""
CHECKS = ("sizes", "sample", "full")
BLOCK = 1 << 20
"""Files are hashed in blocks of 1 MiB: a file's digest is the SHA-256 of its blocks' digests."""
SAMPLED_BLOCKS = 8
SEARCH_BLOCKS = 2
"""Random 1 MiB blocks of each file over :data:`WHOLE_BYTES` that opening it for ``search``
checks against their SHA-256, besides its first and last (:func:`check_sample`); measured by
eval/bench_search_open.py."""
WHOLE_BYTES = 64 << 20
"""Files a search reads that are hashed whole when opened (at 1 GB/s of SHA-256: 64 ms at most
each); a larger one is sampled, and the blocks of the vector rows a search answers from are
checked before the answer is given (:class:`RowBlocks`)."""
INDEX_FILES = ("vectors.npy", "index.faiss", "units.arrow", "manifest.json")
"""The files of a vector index (``index/`` and ``views/<strategy>/index/``) that
:func:`check_sample` checks when a search opens it: what a search reads its answers from."""


def index_file(rel: str) -> bool:
    """Whether the version file ``rel`` is one of a vector index's :data:`INDEX_FILES`.

    Example:
        >>> index_file("index/vectors.npy"), index_file("views/sequential/index/index.faiss")
        (True, True)
    """
    head, _, name = rel.rpartition("/")
    return name in INDEX_FILES[:3] and (head == "index" or head.endswith("/index"))


@dataclass(frozen=True, slots=True)
class Verified:
    """What :meth:`Store.verify` checked.

    Attributes:
        version: the version directory checked.
        files: how many files were checked.
        bytes: their total size.
        hashed: whether every byte was hashed (else sizes, and what ``check`` sampled).
    """

    version: Path
    files: int
    bytes: int
    hashed: bool

    def line(self) -> str:
        """One line for ``convlab stats --verify``."""
        return f"verified: all {self.files} files OK ({self.bytes:,} bytes hashed)"


def block_digests(path: Path, blocks: Iterable[int] | None = None) -> list[str]:
    """SHA-256 (first 128 bits, hex) of each 1 MiB block of ``path``, or of the given blocks."""
    out = []
    with path.open("rb") as fh:
        if blocks is None:
            while chunk := fh.read(BLOCK):
                out.append(hashlib.sha256(chunk).hexdigest()[:32])
            return out
        for b in blocks:
            fh.seek(b * BLOCK)
            out.append(hashlib.sha256(fh.read(BLOCK)).hexdigest()[:32])
    return out


def tree_digest(blocks: list[str]) -> str:
    """A file's digest from its blocks' digests."""
    return hashlib.sha256("".join(blocks).encode()).hexdigest()


def version_files(version: Path) -> dict[str, VersionFile]:
    """Size and digest of every file of a version but its manifest and the readers' lock."""
    out: dict[str, VersionFile] = {}
    for p in sorted(version.rglob("*")):
        rel = p.relative_to(version).as_posix()
        if p.is_file() and rel not in (MANIFEST, READERS):
            blocks = block_digests(p)
            # the index files' blocks are kept at any size: search samples them
            kept = len(blocks) > (SEARCH_BLOCKS if index_file(rel) else SAMPLED_BLOCKS)
            out[rel] = VersionFile(
                size=p.stat().st_size, sha256=tree_digest(blocks), blocks=blocks if kept else None
            )
    return out


def read_manifest(store: Path, version: Path) -> StoreManifest:
    """A version's manifest, its format and checksum checked.

    Raises:
        StoreOutdated: a manifest of an older format (saying to run ``convlab index --rebuild``).
        StoreDamaged: unreadable, not a manifest of this format, or not matching its checksum.
    """
    from convlab.errors import LoadError
    from convlab.files import STORE_MANIFEST, read_regular

    path = version / MANIFEST
    try:  # a FIFO or a device in its place is refused, never opened or read; nor a huge file
        data = read_regular(path, limit=STORE_MANIFEST)
    except LoadError as exc:
        raise damaged(store, path, exc.reason, rebuild=True) from None
    except OSError as exc:
        raise damaged(store, path, f"unreadable ({type(exc).__name__})", rebuild=True) from exc
    return decode_manifest(store, path, data)


def check_files(store: Path, version: Path, manifest: StoreManifest, *, check: str) -> Verified:
    """Check every file's size, and its content as ``check`` says (see :data:`CHECK_ON_INDEX`).

    Raises:
        ValueError: ``check`` is not one of :data:`CHECKS`.
        StoreDamaged: the first file missing, of the wrong size or content.
    """
    if check not in CHECKS:
        raise ValueError(f"check must be one of {', '.join(CHECKS)}")
    files = manifest.version_files
    total = 0
    for rel, rec in files.items():
        path = version / rel
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise damaged(store, path, "missing") from None
        if size != rec.size:
            raise damaged(store, path, f"{size} bytes, {rec.size} expected (truncated?)")
        total += size
        if check == "sizes":
            continue
        blocks = rec.blocks
        if check == "sample" and blocks and len(blocks) > SAMPLED_BLOCKS:
            rng = np.random.default_rng()
            picked = {0, len(blocks) - 1}
            picked.update(rng.choice(len(blocks), SAMPLED_BLOCKS - 2, replace=False).tolist())
            order = sorted(picked)
            digests = block_digests(path, order)
            ok = all(d == blocks[b] for b, d in zip(order, digests, strict=True))
        else:
            ok = tree_digest(block_digests(path)) == rec.sha256
        if not ok:
            raise damaged(store, path, "content does not match its SHA-256 (corrupted)")
    return Verified(version=version, files=len(files), bytes=total, hashed=check == "full")


def check_sample(
    store: Path, version: Path, manifest: StoreManifest, rels: Iterable[str], *, blocks: int
) -> None:
    """Check the files ``rels`` before a search reads them, against their SHA-256.

    A file of up to :data:`WHOLE_BYTES` is hashed whole (or, when it keeps block digests, every
    block); a larger one's first and last blocks (the headers and footers its reader parses
    first: the npy and FAISS headers, Arrow's schema and footer) and ``blocks`` random others.
    Vectors permuted or overwritten at the same size, or a flipped byte of the units, are caught
    before a wrong answer (or a crash) is given, in every file up to :data:`WHOLE_BYTES`; in a
    larger one only if a checked block holds them (see :class:`RowBlocks` for the rest).

    Raises:
        StoreDamaged: a checked block (or file) does not match its SHA-256.
    """
    files = manifest.version_files
    rng = np.random.default_rng()
    for rel in rels:
        rec = files.get(rel)
        if rec is None:
            continue
        path = version / rel
        digests = rec.blocks
        if digests and rec.size > WHOLE_BYTES:
            n = len(digests)
            picked = {0, n - 1, *rng.choice(n, min(blocks, n), replace=False).tolist()}
            order = sorted(int(b) for b in picked)
            found = block_digests(path, order)
            ok = all(d == digests[b] for b, d in zip(order, found, strict=True))
        else:
            ok = tree_digest(block_digests(path)) == rec.sha256
        if not ok:
            raise damaged(store, path, "content does not match its SHA-256", verify=True)


class RowBlocks:
    """The 1 MiB blocks that hold given rows of a stored ``vectors.npy``, checked once each.

    What a search answers from, checked before the answer is given: the rows of its hits (a row
    moved, swapped or overwritten at the same size fails its block's SHA-256). A file without
    block digests (small: hashed whole when opened) needs no row check.

    Args:
        store: the store's folder (for the error's repair line).
        path: the vectors file.
        record: its size and digests from the manifest.
    """

    def __init__(self, store: Path, path: Path, record: VersionFile) -> None:
        self.store, self.path, self.record = store, path, record
        self._checked: set[int] = set()
        self._offset, self._row_bytes = 0, 0
        if record.blocks:
            try:
                with path.open("rb") as fh:
                    major, _ = np.lib.format.read_magic(fh)
                    read = np.lib.format.read_array_header_1_0
                    if major != 1:
                        read = np.lib.format.read_array_header_2_0
                    shape, _, dtype = read(fh)
                    self._offset = fh.tell()
            except (OSError, ValueError) as exc:
                raise damaged(store, path, f"unreadable ({exc})", verify=True) from None
            self._row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize

    def check(self, rows: np.ndarray) -> None:
        """Check the blocks holding ``rows`` (each block once per object).

        Raises:
            StoreDamaged: a block does not match its SHA-256.
        """
        digests = self.record.blocks
        if not digests or not self._row_bytes:
            return
        r = np.asarray(rows, dtype=np.int64).reshape(-1)
        start = self._offset + r * self._row_bytes
        wanted = np.unique(np.concatenate([start, start + self._row_bytes - 1]) // BLOCK)
        todo = [int(b) for b in wanted if int(b) not in self._checked and b < len(digests)]
        for b, d in zip(todo, block_digests(self.path, todo), strict=True):
            if d != digests[b]:
                what = f"block {b} (of the rows searched) does not match its SHA-256"
                raise damaged(self.store, self.path, what, verify=True)
            self._checked.add(b)

    def damaged(self, name: str, what: str) -> StoreDamaged:
        """The error for the file ``name`` of this index found damaged by a search."""
        return damaged(self.store, self.path.parent / name, what, verify=True)


def norm_problem(vectors: np.ndarray, offset: int = 0) -> str:
    """What is wrong with rows that are not of unit length ('' when none is)."""
    if vectors.ndim != 2:
        return f"vectors of shape {vectors.shape}, not a matrix"
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", v, v))
    bad = np.flatnonzero(~(np.abs(norms - 1.0) <= NORM_TOLERANCE))
    if not bad.size:
        return ""
    return f"{bad.size} vectors are not of unit length (row {offset + bad[0]}: {norms[bad[0]]:.4g})"


def check_norms(store: Path, version: Path, *, rows: int | None, index: Path | None = None) -> None:
    """Check that the stored vectors are of unit length: all, or ``rows`` random ones.

    Every index of the version is checked (the first strategy's, ``index/``, and the other
    embedded strategies', ``views/<strategy>/index/``), or the one ``index`` directory given.

    Raises:
        StoreDamaged: a vectors file is unreadable or a checked row is not of unit length.
    """
    paths = [version / "index" / "vectors.npy", *sorted(version.glob(VIEW_VECTORS))]
    for path in paths if index is None else [index / "vectors.npy"]:
        _check_norms(store, path, rows=rows)


VIEW_VECTORS = "views/*/index/vectors.npy"
"""The vectors of every strategy but the first, in a version of several strategies."""


def _check_norms(store: Path, path: Path, *, rows: int | None) -> None:
    try:
        vectors = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise damaged(store, path, f"unreadable ({exc})") from exc
    n = len(vectors)
    if rows is not None and n > rows:
        picked = np.unique(np.random.default_rng().choice(n, rows, replace=False))
        problem = norm_problem(np.asarray(vectors[picked]))
        if problem:
            raise damaged(store, path, problem + " in a sample of rows")
        return
    for start in range(0, n, NORM_CHUNK):
        problem = norm_problem(np.asarray(vectors[start : start + NORM_CHUNK]), start)
        if problem:
            raise damaged(store, path, problem)


def row_guard(store: Path, version: Path, manifest: StoreManifest, index: Path) -> RowBlocks:
    """The :class:`RowBlocks` of the vectors of the index in folder ``index`` of ``version``."""
    rel = (index / "vectors.npy").relative_to(version).as_posix()
    record = manifest.version_files.get(rel) or VersionFile(size=0, sha256="")
    return RowBlocks(store, index / "vectors.npy", record)
