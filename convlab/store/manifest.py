"""A version's files: their checksums, read from its manifest, and the checks that read them.

A file's digest is the SHA-256 of its 1 MiB blocks' digests (one read of the file); files of more
than :data:`SAMPLED_BLOCKS` blocks (the index files: more than :data:`SEARCH_BLOCKS`) also keep
their block digests, so a sample of blocks can be checked without reading the whole file:
``index`` checks one before it builds on a version, ``search`` another when it opens the index
(:func:`check_sample`). Every check raises :class:`StoreDamaged` with one line naming the file and
what to do.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from convlab.store.errors import damaged
from convlab.store.format import StoreManifest, VersionFile, decode_manifest

__all__ = [
    "CHECKS",
    "CHECK_ON_INDEX",
    "FRAMES",
    "MANIFEST",
    "READERS",
    "Verified",
    "check_files",
    "check_norms",
    "check_sample",
    "read_manifest",
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
"""Random 1 MiB blocks of the vectors and of the FAISS file that opening the index for ``search``
checks against their SHA-256 (:func:`check_sample`); measured by eval/bench_verify.py."""
INDEX_FILES = ("vectors.npy", "index.faiss")
"""The files of a vector index (``index/`` and ``views/<strategy>/index/``) that
:func:`check_sample` checks: what a search reads its answers from."""


def index_file(rel: str) -> bool:
    """Whether the version file ``rel`` is one of a vector index's :data:`INDEX_FILES`.

    Example:
        >>> index_file("index/vectors.npy"), index_file("views/sequential/index/index.faiss")
        (True, True)
    """
    head, _, name = rel.rpartition("/")
    return name in INDEX_FILES and (head == "index" or head.endswith("/index"))


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
    from convlab.files import read_regular

    path = version / MANIFEST
    try:  # a FIFO or a device in its place is refused, never opened or read
        data = read_regular(path)
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
    """Check ``blocks`` random 1 MiB blocks of each of ``rels`` (a small file whole).

    What ``search`` checks on open (:data:`SEARCH_BLOCKS` of an index's :data:`INDEX_FILES`):
    vectors permuted, or any other rewrite of the same size, are caught before a wrong answer is
    given.

    Raises:
        StoreDamaged: a checked block (or small file) does not match its SHA-256.
    """
    files = manifest.version_files
    rng = np.random.default_rng()
    for rel in rels:
        rec = files.get(rel)
        if rec is None:
            continue
        path = version / rel
        digests = rec.blocks
        if digests:
            picked = sorted(rng.choice(len(digests), min(blocks, len(digests)), replace=False))
            found = block_digests(path, [int(b) for b in picked])
            ok = all(d == digests[b] for b, d in zip(picked, found, strict=True))
        else:
            ok = tree_digest(block_digests(path)) == rec.sha256
        if not ok:
            raise damaged(store, path, "content does not match its SHA-256 (corrupted)")


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
