"""A store: an index of real histories on disk, updated incrementally and never half-written.

Layout of a store directory::

    DIR/
      current -> v<N>          symlink to the live version, swapped atomically
      v<N>/manifest.json       settings, files seen (size, mtime, sha256), conversation
                               fingerprints, size and sha256 of every file of the version and
                               a checksum of itself
      v<N>/conversations.parquet, messages.parquet, turns.parquet, sentences.parquet,
           units.parquet       (messages: where each message is in its source file)
      v<N>/index/              convlab.index.VectorIndex (FAISS + units + its manifest)
      v<N>/.readers            readers hold a shared lock on it: a version in use is not deleted
      cache/                   the embedding cache (shared by every version)
      .lock                    held while an indexer writes

An update (:meth:`Store.update`) reads only files whose size, mtime or content hash changed, keeps
the rows of conversations whose content fingerprint is unchanged, rebuilds units for the others
(the embedding cache means only new texts are embedded: the idea of the design documents'
``last_embedded_turn_number`` and content hash, at the level of unit texts), drops conversations
whose files are gone, and writes a new version beside the old one before switching ``current`` to
it with one atomic ``rename``. A run killed at any point leaves the previous version live and valid;
leftover temporary versions are removed by the next run. Two indexers never write one store: the
second waits (``wait=True``) or refuses with :class:`StoreLocked`.

**One version per Store object.** The first read pins the live version: the manifest, every frame
and the index of one ``Store`` come from that one directory, however many writers switch
``current`` meanwhile (the pinned version holds a shared lock that keeps writers from deleting it);
:meth:`Store.update` re-pins to the version it wrote, :meth:`Store.refresh` to the live one.

**A self-checking store.** The manifest records the size and SHA-256 of every file of its version
and a checksum of itself. Opening a version checks the manifest's checksum and every file's size;
:meth:`Store.verify` (``convlab stats --verify``) and every ``update`` also check the hashes
(:data:`CHECK_ON_INDEX`); loading the index checks that its vectors are unit length. A damaged,
missing or truncated file raises :class:`StoreDamaged` with one line naming it, and the next
``update`` rebuilds the version from the transcripts, its vectors from the embedding cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from filelock import FileLock, Timeout

from convlab import __version__
from convlab.atomic import fsync_dir
from convlab.loaders import Corpus, LoadError
from convlab.loaders.registry import FORMATS, load_files
from convlab.pipeline.redact import REDACT_MODES, RULES_VERSION, redact_corpus

if TYPE_CHECKING:
    from convlab.engines import Engine

__all__ = [
    "IndexSummary",
    "Store",
    "StoreConfig",
    "StoreDamaged",
    "StoreLocked",
    "StoreMismatch",
    "Verified",
    "default_history_paths",
]

try:  # shared locks that keep a version in use from being deleted (POSIX)
    import fcntl
except ImportError:  # pragma: no cover - Windows: versions are deleted without checking readers
    fcntl = None  # type: ignore[assignment]

STORE_FORMAT = 2
MANIFEST = "manifest.json"
READERS = ".readers"
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
_VERSION = re.compile(r"^v\d+$")
_LEFTOVER = re.compile(r"^\.(?:tmp|current)-v\d+$")
REDACT_CHOICES: tuple[str, ...] = tuple(REDACT_MODES)


class StoreLocked(RuntimeError):
    """Another indexer holds the store's lock."""


class StoreMismatch(ValueError):
    """The store was built with another model or other settings (``--rebuild`` starts over)."""


class StoreDamaged(RuntimeError):
    """A file of the live version is missing, truncated or fails its content hash.

    The message is one line naming the file and what to do (``convlab index`` repairs it).
    """


def _crash_point(name: str) -> None:
    """Kill this process with SIGKILL at a named point when ``CONVLAB_CRASH_AT`` names it.

    Used only by the crash-safety tests, which run ``convlab index`` in a subprocess.
    """
    if os.environ.get("CONVLAB_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def default_history_paths() -> list[Path]:
    """The usual homes of Claude Code, Codex and Amplifier histories that exist on this machine."""
    home = Path.home()
    codex_home = Path(os.environ.get("CODEX_HOME", home / ".codex"))
    candidates = [
        home / ".claude" / "projects",
        codex_home / "sessions",
        codex_home / "archived_sessions",
        home / ".amplifier" / "projects",
    ]
    return [p for p in candidates if p.is_dir()]


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreConfig:
    """What a store is built with; changing any of these needs ``rebuild=True``.

    Attributes:
        strategy: the embedding strategy (a key of ``convlab.STRATEGIES``).
        max_tokens: the unit's token limit, [CLS] and [SEP] included.
        index_kind: a key of ``convlab.index.INDEX_KINDS`` (``flat`` exact, ``hnsw``, ``ivf``,
            ``ivfpq``).
        redact: a key of :data:`convlab.pipeline.redact.REDACT_MODES`: ``all`` (every text stored or
            embedded, titles included; the default), ``tool-output`` or ``none``.
        policy: the content policy as a dict (``ContentPolicy.as_dict()``).
    """

    strategy: str = "turn_pair"
    max_tokens: int = 256
    index_kind: str = "flat"
    redact: str = "all"
    policy: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from convlab.index import INDEX_KINDS
        from convlab.strategies import STRATEGIES

        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(sorted(STRATEGIES))}")
        if self.index_kind not in INDEX_KINDS:
            raise ValueError(f"index_kind must be one of {', '.join(INDEX_KINDS)}")
        if self.redact not in REDACT_CHOICES:
            raise ValueError(f"redact must be one of {', '.join(REDACT_CHOICES)}")
        if not 8 <= self.max_tokens <= 256:
            raise ValueError("max_tokens must be between 8 and 256 tokens")


@dataclass(slots=True)
class IndexSummary:
    """What one ``update`` did."""

    conversations: int = 0
    turns: int = 0
    units: int = 0
    files_read: int = 0
    files_unchanged: int = 0
    conversations_added: int = 0
    conversations_changed: int = 0
    conversations_removed: int = 0
    texts_embedded: int = 0
    texts_from_cache: int = 0
    skipped: list[tuple[str, int, str]] = field(default_factory=list)
    seconds: float = 0.0
    wrote_version: bool = False
    repaired: str = ""
    reread: str = ""

    def lines(self) -> list[str]:
        """A human-readable closing summary."""
        out = [
            f"{self.conversations} conversations, {self.turns} turns, {self.units} units",
            f"files: {self.files_read} read, {self.files_unchanged} unchanged",
            f"conversations: {self.conversations_added} added, {self.conversations_changed} "
            f"changed, {self.conversations_removed} removed",
            f"texts: {self.texts_embedded} embedded, {self.texts_from_cache} from cache",
            f"skipped records: {len(self.skipped)}",
        ]
        reasons: dict[str, int] = {}
        for _, _, reason in self.skipped:
            reasons[reason] = reasons.get(reason, 0) + 1
        out += [f"  {n} x {r}" for r, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:10]]
        if self.repaired:
            out.append(f"repaired: {self.repaired}")
        if self.reread:
            out.append(f"every file read again: {self.reread}")
        out.append(f"time: {self.seconds:.1f} s" + ("" if self.wrote_version else " (unchanged)"))
        return out


def _file_sha256(path: Path) -> str:
    """The SHA-256 of a transcript file, opened as a regular file only (never blocks on a FIFO).

    Raises:
        LoadError: the file is no longer a readable regular file.
    """
    from convlab.loaders.files import open_regular

    h = hashlib.sha256()
    with open_regular(path) as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _fingerprints(corpus: Corpus) -> dict[str, str]:
    """A content hash per conversation: its messages and blocks, in order."""
    msgs = corpus.messages.select("conversation_id", "message_index", "role", "is_real_user")
    blocks = corpus.blocks.select(
        "conversation_id", "message_index", "block_type", "text", "tool_name", "tool_input"
    )
    joined = blocks.join(msgs, on=["conversation_id", "message_index"], how="left").sort(
        "conversation_id", "message_index"
    )
    row_hash = joined.select(
        "conversation_id",
        pl.concat_str(
            [pl.col(c).cast(pl.String).fill_null("\x00") for c in joined.columns[1:]],
            separator="\x1f",
        ).alias("row"),
    )
    out: dict[str, str] = {}
    for conv, rows in row_hash.group_by("conversation_id", maintain_order=True):
        h = hashlib.sha256()
        for r in rows["row"]:
            h.update(r.encode("utf-8", "surrogatepass"))
            h.update(b"\x1e")
        out[str(conv[0])] = h.hexdigest()
    for conv in corpus.conversations["conversation_id"]:
        out.setdefault(conv, hashlib.sha256(b"").hexdigest())
    return out


FRAMES = ("conversations", "messages", "turns", "sentences", "units")
"""The frames a version stores, one parquet file each (messages: source file and line)."""


@dataclass(frozen=True, slots=True)
class Verified:
    """What :meth:`Store.verify` checked.

    Attributes:
        version: the version directory checked.
        files: how many files were checked.
        bytes: their total size.
        hashed: False for a store written before checksums (sizes and hashes unknown).
    """

    version: Path
    files: int
    bytes: int
    hashed: bool

    def line(self) -> str:
        """One line for ``convlab stats --verify``."""
        if not self.hashed:
            return (
                f"not verified: {self.version.name} was written before stores recorded "
                "checksums; `convlab index` adds them"
            )
        return f"verified: all {self.files} files OK ({self.bytes:,} bytes hashed)"


def _manifest_checksum(manifest: dict[str, Any]) -> str:
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _block_digests(path: Path, blocks: Iterable[int] | None = None) -> list[str]:
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


def _tree_digest(blocks: list[str]) -> str:
    return hashlib.sha256("".join(blocks).encode()).hexdigest()


def _version_files(version: Path) -> dict[str, dict[str, Any]]:
    """Size and digest of every file of a version but its manifest and the readers' lock.

    The digest is the SHA-256 of the file's 1 MiB blocks' digests (one read of the file); files of
    more than :data:`SAMPLED_BLOCKS` blocks also keep their block digests, so a sample of blocks
    can be checked without reading the whole file.
    """
    out: dict[str, dict[str, Any]] = {}
    for p in sorted(version.rglob("*")):
        rel = p.relative_to(version).as_posix()
        if p.is_file() and rel not in (MANIFEST, READERS):
            blocks = _block_digests(p)
            rec: dict[str, Any] = {"size": p.stat().st_size, "sha256": _tree_digest(blocks)}
            if len(blocks) > SAMPLED_BLOCKS:
                rec["blocks"] = blocks
            out[rel] = rec
    return out


def _norm_problem(vectors: np.ndarray, offset: int = 0) -> str:
    """What is wrong with rows that are not of unit length ('' when none is)."""
    if vectors.ndim != 2:
        return f"vectors of shape {vectors.shape}, not a matrix"
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", v, v))
    bad = np.flatnonzero(~(np.abs(norms - 1.0) <= NORM_TOLERANCE))
    if not bad.size:
        return ""
    return f"{bad.size} vectors are not of unit length (row {offset + bad[0]}: {norms[bad[0]]:.4g})"


def _hold_shared(path: Path) -> Any:
    """Open ``path`` and take a shared lock on it (None when it does not exist or no fcntl)."""
    if fcntl is None:
        return None
    try:
        fh = path.open("rb")
    except OSError:
        return None
    fcntl.flock(fh.fileno(), fcntl.LOCK_SH)
    return fh


def _remove_version(version: Path) -> bool:
    """Delete a version unless a reader holds it; returns whether it was deleted."""
    fh = None
    readers = version / READERS
    if fcntl is not None and readers.is_file():
        fh = readers.open("rb")
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


class Store:
    """An on-disk index of transcripts (a directory); see the module docstring for its layout.

    Every read of one ``Store`` object comes from one version, pinned by the first read.

    Args:
        directory: the store directory (created on the first update).
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory).expanduser()
        self._pinned: Path | None = None
        self._pin_handle: Any = None
        self._manifest: dict[str, Any] = {}

    # -- reading ------------------------------------------------------------------------------
    @property
    def current(self) -> Path | None:
        """The live version directory on disk now (resolved), or None for an empty store."""
        link = self.directory / "current"
        if not link.is_symlink() and not link.exists():
            return None
        target = link.resolve()
        return target if (target / MANIFEST).is_file() else None

    @property
    def version(self) -> Path:
        """The version this object reads (pinned by its first read)."""
        return self._pin()

    def exists(self) -> bool:
        """Whether the store holds a complete version."""
        return self.current is not None

    def manifest(self) -> dict[str, Any]:
        """The pinned version's manifest.

        Raises:
            FileNotFoundError: the store is empty or missing.
            StoreDamaged: the manifest or the size of a file of the version is wrong.
        """
        self._pin()
        return json.loads(json.dumps(self._manifest))  # a copy: callers cannot edit the pin

    def frame(self, name: str) -> pl.DataFrame:
        """One of the stored frames: conversations, messages, turns, sentences, units."""
        if name not in FRAMES:
            raise ValueError(f"unknown frame {name!r}; valid: {', '.join(FRAMES)}")
        path = self._pin() / f"{name}.parquet"
        try:
            return pl.read_parquet(path)
        except Exception as exc:  # polars reports corruption with several exception types
            raise self._damaged(path, f"unreadable ({type(exc).__name__})") from exc

    def index(self) -> Any:
        """The stored :class:`convlab.index.VectorIndex`, its vectors checked to be unit length."""
        from convlab.index import VectorIndex

        version = self._pin()
        directory = version / "index"
        self._check_norms(version, rows=None)  # on the file, in slices: no copy of the vectors
        try:
            return VectorIndex.load(directory)
        except Exception as exc:  # numpy, FAISS and polars each raise their own types
            raise self._damaged(directory, f"unreadable ({type(exc).__name__}: {exc})") from exc

    def verify(self) -> Verified:
        """Check the size and SHA-256 of every file of the pinned version.

        Raises:
            StoreDamaged: the first file that is missing, of the wrong size or content.
        """
        version = self._pin()
        verified = self._check_files(version, self._manifest, check="full")
        self._check_norms(version, rows=None)
        return verified

    def _check_norms(self, version: Path, *, rows: int | None) -> None:
        """Check that the stored vectors are of unit length: all, or ``rows`` random ones."""
        path = version / "index" / "vectors.npy"
        try:
            vectors = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise self._damaged(path, f"unreadable ({exc})") from exc
        n = len(vectors)
        if rows is not None and n > rows:
            picked = np.unique(np.random.default_rng().choice(n, rows, replace=False))
            problem = _norm_problem(np.asarray(vectors[picked]))
            if problem:
                raise self._damaged(path, problem + " in a sample of rows")
            return
        for start in range(0, n, NORM_CHUNK):
            problem = _norm_problem(np.asarray(vectors[start : start + NORM_CHUNK]), start)
            if problem:
                raise self._damaged(path, problem)

    def refresh(self) -> None:
        """Release the pinned version: the next read pins the version live then."""
        if self._pin_handle is not None:
            self._pin_handle.close()
        self._pinned, self._pin_handle, self._manifest = None, None, {}

    close = refresh

    def _damaged(self, path: Path, what: str) -> StoreDamaged:
        return StoreDamaged(
            f"{path}: {what}; run `convlab index --store {self.directory}` to repair"
        )

    def _live(self) -> Path:
        """The live version (resolved), whose manifest exists."""
        link = self.directory / "current"
        if not link.is_symlink() and not link.exists():
            raise FileNotFoundError(
                f"no index at {self.directory}; build one with `convlab index PATH --store "
                f"{self.directory}`"
            )
        target = link.resolve()
        if not (target / MANIFEST).is_file():
            raise self._damaged(link, f"points to {target.name}, which is missing or incomplete")
        return target

    def _pin(self) -> Path:
        if self._pinned is not None:
            return self._pinned
        for _ in range(1000):  # a writer may delete the version between resolve and lock
            version = self._live()
            handle = _hold_shared(version / READERS)
            if (version / MANIFEST).is_file():
                try:
                    manifest = self._read_manifest(version)
                    self._check_files(version, manifest, check="sizes")
                except BaseException:
                    if handle is not None:
                        handle.close()
                    raise
                self._pinned, self._pin_handle, self._manifest = version, handle, manifest
                return version
            if handle is not None:
                handle.close()
        raise RuntimeError(f"{self.directory}: the live version kept changing; try again")

    def _read_manifest(self, version: Path) -> dict[str, Any]:
        path = version / MANIFEST
        try:
            manifest = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise self._damaged(path, f"unreadable ({type(exc).__name__})") from exc
        if not isinstance(manifest, dict):
            raise self._damaged(path, "not a JSON object")
        legacy = manifest.get("format", 1) < 2 and "checksum" not in manifest
        if not legacy and manifest.get("checksum") != _manifest_checksum(manifest):
            raise self._damaged(path, "does not match its checksum (edited or corrupted)")
        return manifest

    def _check_files(self, version: Path, manifest: dict[str, Any], *, check: str) -> Verified:
        """Check every file's size, and its content as ``check`` says (see CHECK_ON_INDEX)."""
        if check not in CHECKS:
            raise ValueError(f"check must be one of {', '.join(CHECKS)}")
        files: dict[str, dict[str, Any]] | None = manifest.get("version_files")
        if files is None:
            return Verified(version=version, files=0, bytes=0, hashed=False)
        total = 0
        for rel, rec in files.items():
            path = version / rel
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                raise self._damaged(path, "missing") from None
            if size != rec["size"]:
                raise self._damaged(path, f"{size} bytes, {rec['size']} expected (truncated?)")
            total += size
            if check == "sizes":
                continue
            blocks = rec.get("blocks")
            if check == "sample" and blocks:
                rng = np.random.default_rng()
                picked = {0, len(blocks) - 1}
                picked.update(rng.choice(len(blocks), SAMPLED_BLOCKS - 2, replace=False).tolist())
                order = sorted(picked)
                digests = _block_digests(path, order)
                ok = all(d == blocks[b] for b, d in zip(order, digests, strict=True))
            else:
                ok = _tree_digest(_block_digests(path)) == rec["sha256"]
            if not ok:
                raise self._damaged(path, "content does not match its SHA-256 (corrupted)")
        return Verified(version=version, files=len(files), bytes=total, hashed=check == "full")

    # -- writing ------------------------------------------------------------------------------
    def lock(self, *, wait: bool = False) -> FileLock:
        """The store's write lock (acquire it with ``with``)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.directory / ".lock"), timeout=-1 if wait else 0)

    def update(
        self,
        paths: Sequence[str | Path],
        *,
        config: StoreConfig,
        embedder: Any,
        rebuild: bool = False,
        wait: bool = False,
        progress: bool | None = None,
        log: Callable[[str], None] | None = None,
        engine: str | Engine = "local",
    ) -> IndexSummary:
        """Bring the store up to date with the transcripts under ``paths``.

        The live version is checked first: its manifest and file sizes always, its contents as
        :data:`CHECK_ON_INDEX` says (by default every small file whole, sampled blocks of the
        vectors and the FAISS file). A damaged version (or one written before
        checksums) is rebuilt from the transcripts, its vectors taken from the embedding cache.
        Afterwards this object reads the version written (or the live one if nothing changed).

        Args:
            paths: files or directories to index.
            config: strategy, budget, index kind, redaction and content policy.
            embedder: the :class:`convlab.embed.Embedder` (wrapped here in the store's cache).
            rebuild: start from scratch even when settings match.
            wait: wait for another indexer instead of refusing.
            progress: show progress bars (None = when attached to a terminal).
            log: where to send progress lines.
            engine: where the embedding runs (a key of ``convlab.engines.ENGINES`` or an
                engine object); the store is the same whichever engine embeds.

        Raises:
            StoreLocked: another indexer is writing this store and ``wait`` is False.
            StoreMismatch: the store was built with other settings (pass ``rebuild=True``).
        """
        for p in paths:
            if not Path(p).expanduser().exists():
                raise FileNotFoundError(f"no such file or directory: {p}")
        lock = self.lock(wait=wait)
        try:
            lock.acquire()
        except Timeout:
            raise StoreLocked(
                f"another `convlab index` is writing {self.directory}; wait for it or pass --wait"
            ) from None
        try:
            return self._update(
                paths, config, embedder, rebuild, progress, log or (lambda _: None), engine
            )
        finally:
            lock.release()

    def _open_for_update(self, log: Callable[[str], None]) -> tuple[dict[str, Any] | None, str]:
        """The live manifest (None: none or unreadable) and what is damaged ('' if nothing)."""
        self.refresh()
        try:
            version = self._pin()
            self._check_files(version, self._manifest, check=CHECK_ON_INDEX)
            if self._manifest.get("version_files") is not None and CHECK_ON_INDEX != "sizes":
                self._check_norms(version, rows=None if CHECK_ON_INDEX == "full" else NORM_ROWS)
        except FileNotFoundError:
            return None, ""
        except StoreDamaged as exc:
            log(f"repairing: {exc}")
            try:
                manifest = self._read_manifest(self._live())
            except (StoreDamaged, FileNotFoundError):
                manifest = None
            self.refresh()
            return manifest, str(exc).split("; run `convlab index")[0]
        manifest = self._manifest
        if manifest.get("version_files") is None:
            what = f"{self._pinned}: written before stores recorded checksums; rebuilding"
            log(what)
            return manifest, what
        return manifest, ""

    def _update(
        self,
        paths: Sequence[str | Path],
        config: StoreConfig,
        embedder: Any,
        rebuild: bool,
        progress: bool | None,
        log: Callable[[str], None],
        engine: str | Engine = "local",
    ) -> IndexSummary:
        from convlab.embed import CachedEmbedder
        from convlab.engines import get_engine
        from convlab.index import VectorIndex

        eng = get_engine(engine)  # an unknown name or a missing extra fails before any work
        started = time.perf_counter()
        summary = IndexSummary()
        live_manifest, damage = self._open_for_update(log)
        if live_manifest is not None and not rebuild:  # before anything is removed
            self._check_settings(live_manifest, config, embedder)
        self._remove_leftovers()
        summary.repaired = damage
        rules_changed = (
            live_manifest is not None
            and config.redact != "none"
            and live_manifest.get("redact_rules") != RULES_VERSION
        )
        if rules_changed and not (rebuild or damage):
            log("the redaction rules changed since the last index: every file is read again")
            summary.reread = "redaction rules changed"
        old_manifest = None if (rebuild or damage or rules_changed) else live_manifest
        roots = [Path(p).expanduser().resolve() for p in paths]
        for r in roots:
            if not r.exists():
                raise FileNotFoundError(f"no such file or directory: {r}")

        old_files: dict[str, dict[str, Any]] = (old_manifest or {}).get("files", {})
        seen = list(_candidate_files(roots, summary.skipped))
        changed: list[Path] = []
        files: dict[str, dict[str, Any]] = {}
        for f in seen:
            try:  # the file may have gone or changed kind since the walk: a skip, not a crash
                st = f.stat()
                rec = old_files.get(str(f))
                if rec and rec["size"] == st.st_size and rec["mtime_ns"] == st.st_mtime_ns:
                    files[str(f)] = rec
                    summary.files_unchanged += 1
                    continue
                sha = _file_sha256(f)
            except LoadError as exc:
                summary.skipped.append((str(f), 0, exc.reason))
                continue
            except OSError as exc:
                summary.skipped.append((str(f), 0, f"cannot read file ({exc.strerror or exc})"))
                continue
            if rec and rec["sha256"] == sha:
                files[str(f)] = {**rec, "mtime_ns": st.st_mtime_ns}
                summary.files_unchanged += 1
                continue
            files[str(f)] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha}
            changed.append(f)
        # files indexed before, under these roots, and gone now
        gone = [
            p
            for p in old_files
            if p not in files and any(Path(p).is_relative_to(r) or Path(p) == r for r in roots)
        ]
        kept_files = {p: rec for p, rec in old_files.items() if p not in files and p not in gone}
        files.update(kept_files)

        # conversations whose files changed or are gone are re-derived from the changed files
        stale_convs: set[str] = set()
        for p in [*map(str, changed), *gone]:
            stale_convs.update(old_files.get(p, {}).get("conversations", []))

        # a conversation spread over several files (a resumed session) is re-read whole
        by_conv: dict[str, set[str]] = {}
        for p, rec in old_files.items():
            for c in rec.get("conversations", []):
                by_conv.setdefault(c, set()).add(p)
        siblings = {
            Path(p)
            for c in stale_convs
            for p in by_conv.get(c, ())
            if p in files and Path(p) not in changed and Path(p).exists()
        }
        changed.extend(sorted(siblings))
        corpus = self._load(changed, summary)
        corpus = _redact(corpus, config.redact)
        new_prints = _fingerprints(corpus)
        old_prints: dict[str, str] = (old_manifest or {}).get("fingerprints", {})
        skipped_by_file: dict[str, int] = {}
        for path in corpus.report.skipped["source_path"]:
            skipped_by_file[path] = skipped_by_file.get(path, 0) + 1
        for f in changed:
            files[str(f)]["conversations"] = sorted(
                corpus.conversations.filter(pl.col("source_path") == str(f))[
                    "conversation_id"
                ].to_list()
            )
            files[str(f)]["skipped"] = skipped_by_file.get(str(f), 0)
        summary.files_read = len(changed)

        reuse = {c for c, fp in new_prints.items() if old_prints.get(c) == fp}
        fresh = set(new_prints) - reuse
        summary.conversations_added = len(fresh - set(old_prints))
        summary.conversations_changed = len(fresh & set(old_prints))
        removed = (stale_convs - set(new_prints)) | (fresh & set(old_prints))
        summary.conversations_removed = len(stale_convs - set(new_prints))

        if not fresh and not removed and old_manifest is not None and not gone:
            if changed:  # content identical (e.g. a transcript rewritten in place): update stats
                self._write_manifest_only(old_manifest, files)
            summary.seconds = time.perf_counter() - started
            self._fill_counts(summary)
            return summary
        _crash_point("after_load")

        # new rows for fresh conversations
        new = self._derive(corpus.filter_conversations(fresh) if fresh else None, config)
        cache = CachedEmbedder(embedder, self.directory / "cache")
        try:
            new_vectors = eng.embed(new["units"]["text"].to_list(), cache)
        finally:
            if isinstance(engine, str):
                eng.close()
        stats = cache.stats
        summary.texts_embedded = int(stats.embedded)
        summary.texts_from_cache = int(stats.from_cache)
        _crash_point("after_embed")

        # old rows for every conversation not removed or re-derived
        frames: dict[str, pl.DataFrame] = {}
        old_vectors = np.zeros((0, embedder.dimension), dtype=np.float32)
        drop = removed | fresh
        if old_manifest is not None:
            for name in FRAMES:
                old = self.frame(name)
                frames[name] = old.filter(~pl.col("conversation_id").is_in(sorted(drop)))
            old_index = self.index()
            keep_rows = np.flatnonzero(
                ~old_index.units["conversation_id"].is_in(sorted(drop)).to_numpy()
            )
            old_vectors = old_index.vectors(keep_rows)
        for name in FRAMES:
            parts = [f for f in (frames.get(name), new[name]) if f is not None and f.height]
            frames[name] = pl.concat(parts) if parts else new[name]
        vectors = np.vstack([old_vectors, new_vectors]).astype(np.float32, copy=False)
        if frames["units"]["unit_id"].is_duplicated().any():
            raise RuntimeError("duplicate unit ids after update; the store was not changed")

        prints = {c: fp for c, fp in old_prints.items() if c not in drop}
        prints.update({c: new_prints[c] for c in fresh})
        manifest = {
            "format": STORE_FORMAT,
            "convlab_version": __version__,
            "model_id": embedder.model_id,
            "dimension": int(embedder.dimension),
            "config": asdict(config),
            "redact_rules": RULES_VERSION,
            "roots": sorted({*map(str, roots), *(old_manifest or {}).get("roots", [])}),
            "files": files,
            "fingerprints": prints,
            "counts": {n: frames[n].height for n in frames},
            "updated_at": time.time(),
        }
        index = VectorIndex.build(
            frames["units"],
            vectors,
            model_id=embedder.model_id,
            kind=config.index_kind,
            strategy=config.strategy,
            policy=config.policy,
            corpus_fingerprint=hashlib.sha256(
                json.dumps(prints, sort_keys=True).encode()
            ).hexdigest(),
        )
        self._write_version(manifest, frames, index)
        summary.wrote_version = True
        summary.seconds = time.perf_counter() - started
        self._fill_counts(summary)
        summary.skipped += [
            (r["source_path"], r["source_line"], r["reason"])
            for r in corpus.report.skipped.iter_rows(named=True)
        ]
        return summary

    def _check_settings(self, manifest: dict[str, Any], config: StoreConfig, embedder: Any) -> None:
        if manifest.get("model_id") != embedder.model_id:
            raise StoreMismatch(
                f"{self.directory} was built with model {manifest.get('model_id')!r}, not "
                f"{embedder.model_id!r}; pass --rebuild to start over"
            )
        old = dict(manifest.get("config", {}))
        if "budget" in old and "max_tokens" not in old:  # stores written before the rename
            old["max_tokens"] = old.pop("budget")
        if old != asdict(config):
            diff = [k for k in asdict(config) if old.get(k) != asdict(config)[k]]
            raise StoreMismatch(
                f"{self.directory} was built with other settings ({', '.join(diff)}); "
                "pass --rebuild to start over"
            )

    def _load(self, files: Sequence[Path], summary: IndexSummary) -> Corpus:
        return load_files(list(files)) if files else load_empty()

    def _derive(self, corpus: Corpus | None, config: StoreConfig) -> dict[str, pl.DataFrame]:
        from convlab import schema
        from convlab.pipeline.chunks import chunks as make_chunks
        from convlab.pipeline.policy import ContentPolicy
        from convlab.pipeline.turns import turns as make_turns
        from convlab.pipeline.units import units as make_units

        if corpus is None:
            return {
                "conversations": schema.empty(schema.CONVERSATIONS),
                "messages": schema.empty(schema.MESSAGES),
                "turns": schema.empty(schema.TURNS),
                "sentences": schema.empty(schema.CHUNKS),
                "units": schema.empty(schema.UNITS),
            }
        policy = ContentPolicy(**config.policy) if config.policy else ContentPolicy()
        turns = make_turns(corpus)
        chunks = make_chunks(corpus, policy)
        units = make_units(chunks, config.strategy, max_tokens=config.max_tokens)
        return {
            "conversations": corpus.conversations,
            "messages": corpus.messages,
            "turns": turns,
            "sentences": chunks,  # the stored frame keeps its name (sentences.parquet)
            "units": units,
        }

    def _write_version(
        self, manifest: dict[str, Any], frames: dict[str, pl.DataFrame], index: Any
    ) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        name = f"v{time.time_ns()}"
        tmp = self.directory / f".tmp-{name}"
        tmp.mkdir()
        for n, f in frames.items():
            f.write_parquet(tmp / f"{n}.parquet")
        _crash_point("during_write")
        index.save(tmp / "index")
        (tmp / READERS).touch()
        manifest = {**manifest, "version_files": _version_files(tmp)}
        manifest["checksum"] = _manifest_checksum(manifest)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
        _fsync_dir(tmp)
        final = self.directory / name
        tmp.rename(final)
        _crash_point("before_switch")
        link_tmp = self.directory / f".current-{name}"
        link_tmp.symlink_to(name)
        os.replace(link_tmp, self.directory / "current")
        _fsync_dir(self.directory)
        _crash_point("after_switch")
        self.refresh()  # release the old version, read the new one from now on
        self._pin()
        self._remove_leftovers()

    def _write_manifest_only(self, manifest: dict[str, Any], files: dict[str, Any]) -> None:
        cur = self._pin()
        updated = {**manifest, "files": files}
        if "checksum" in updated:
            updated["checksum"] = _manifest_checksum(updated)
        tmp = cur / ".manifest.json.tmp"
        with tmp.open("w") as fh:
            fh.write(json.dumps(updated, indent=1, sort_keys=True))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, cur / MANIFEST)
        self._manifest = updated

    def _remove_leftovers(self) -> None:
        """Delete temporary versions of killed runs and versions no longer live nor being read.

        Only names this class writes are touched (``v<digits>``, ``.tmp-v<digits>``,
        ``.current-v<digits>``), and paths are compared resolved on both sides, so a store given
        as a relative path, ``.`` or through a symlink never loses its live version.
        """
        if not self.directory.is_dir():
            return
        try:
            live: Path | None = self._live()
        except (FileNotFoundError, StoreDamaged):
            live = None
        for p in self.directory.iterdir():
            if _LEFTOVER.match(p.name):
                if p.is_symlink() or p.is_file():
                    p.unlink(missing_ok=True)
                else:
                    shutil.rmtree(p, ignore_errors=True)
            elif (
                _VERSION.match(p.name)
                and live is not None
                and p.is_dir()
                and not p.is_symlink()
                and p.resolve() != live
                and p.resolve() != self._pinned
            ):
                _remove_version(p)

    def _fill_counts(self, summary: IndexSummary) -> None:
        if self.exists():
            counts = self.manifest().get("counts", {})
            summary.conversations = int(counts.get("conversations", 0))
            summary.turns = int(counts.get("turns", 0))
            summary.units = int(counts.get("units", 0))


def load_empty() -> Corpus:
    """An empty corpus."""
    from convlab.loaders.base import CorpusBuilder

    return CorpusBuilder().build()


def _candidate_files(
    roots: Iterable[Path], skipped: list[tuple[str, int, str]] | None = None
) -> Iterable[Path]:
    """The regular, readable files under ``roots`` (resolved), companions left out.

    Walked by the loaders' :func:`convlab.loaders.files.walk`, so ``convlab index`` skips what
    ``load()`` skips: FIFOs, devices and sockets are never opened (hashing one would block or
    never end), dangling and looping symlinks and unreadable files do not abort the index.
    Each such file is appended to ``skipped`` as ``(path, 0, reason)``.
    """
    from convlab.loaders.files import walk

    for root in roots:
        for path, problem in walk(root):
            if problem is not None:
                if skipped is not None:
                    skipped.append((str(path), 0, problem))
                continue
            if path == root:
                yield root
            elif not any(r.companion(path) for _, r in FORMATS.items()):
                yield path.resolve()


def _redact(corpus: Corpus, mode: str) -> Corpus:
    """Redact what ``mode`` covers before anything is fingerprinted, embedded or stored."""
    return redact_corpus(corpus, mode)


def _fsync_dir(path: Path) -> None:
    for p in path.rglob("*") if path.is_dir() else []:
        if p.is_file():
            with p.open("rb") as fh:
                os.fsync(fh.fileno())
    fsync_dir(path)
