"""The :class:`Store` object: one pinned version of a store directory, read and updated.

**One version per Store object.** The first read pins the live version: the manifest, every frame
and the index of one ``Store`` come from that one directory, however many writers switch
``current`` meanwhile (the pinned version holds a shared lock that keeps writers from deleting it);
:meth:`Store.update` re-pins to the version it wrote, :meth:`Store.refresh` to the live one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

import msgspec
import polars as pl
from filelock import FileLock, Timeout

from convlab.atomic import disk_full
from convlab.defaults import K
from convlab.protocols import Embedder
from convlab.store import manifest as mf
from convlab.store.config import IndexSummary, StoreConfig
from convlab.store.errors import StoreDamaged, StoreFull, StoreLocked, StoreOutdated
from convlab.store.format import StoreManifest
from convlab.store.manifest import (
    CHECK_ON_INDEX,
    FRAMES,
    MANIFEST,
    NORM_ROWS,
    READERS,
    Verified,
)
from convlab.store.marker import claim, marker_id
from convlab.store.owner import check_store
from convlab.store.versions import (
    check_lock_file,
    full_message,
    hold_shared,
    remove_leftovers,
    write_manifest,
    write_version,
)

if TYPE_CHECKING:
    from convlab.engines import Engine
    from convlab.index import VectorIndex
    from convlab.index.bm25 import BM25Index
    from convlab.retrieval import SearchOptions
    from convlab.store.search import StoreSearch
    from convlab.systems.system import System

__all__ = ["Store", "open_store"]


class Store:
    """An on-disk index of transcripts (a directory; :mod:`convlab.store`: its layout).

    Every read of one ``Store`` object comes from one version, pinned by the first read; the
    ``directory`` is created by the first update.
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory).expanduser()
        self._pinned: Path | None = None
        self._pin_handle: IO[bytes] | None = None
        self._manifest: StoreManifest | None = None
        self._searcher: StoreSearch | None = None
        self._log: Callable[[str], None] = lambda _: None
        self._checked: set[str] = set()  # files of the pinned version checked when first read
        self._frames: dict[str, pl.DataFrame] = {}  # its frames, read once (a version is fixed)

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

    def manifest(self) -> StoreManifest:
        """The pinned version's manifest (a copy: callers cannot edit the pin).

        Raises:
            FileNotFoundError: the store is empty or missing.
            StoreOutdated: the store was written in an older format (``--rebuild`` it).
            StoreDamaged: the manifest or the size of a file of the version is wrong.
        """
        return msgspec.convert(msgspec.to_builtins(self._pinned_manifest()), StoreManifest)

    def _pinned_manifest(self) -> StoreManifest:
        """The pinned version's manifest itself (not a copy: for this class's own reads)."""
        self._pin()
        if self._manifest is None:  # pragma: no cover - _pin sets both or raises
            raise RuntimeError(f"{self.directory}: pinned without a manifest")
        return self._manifest

    def frame(self, name: str) -> pl.DataFrame:
        """A frame of the pinned version, read and checked once (kept until :meth:`refresh`)."""
        if name not in FRAMES:
            raise ValueError(f"unknown frame {name!r}; valid: {', '.join(FRAMES)}")
        path = self._pin() / f"{name}.parquet"
        if name not in self._frames:
            self._check([f"{name}.parquet"])
            try:
                self._frames[name] = pl.read_parquet(path, glob=False)
            except Exception as exc:  # polars reports corruption with several exception types
                raise self._damaged(path, f"unreadable ({type(exc).__name__})") from exc
        return self._frames[name]

    def strategies(self) -> dict[str, bool]:
        """Per strategy held, whether its units are embedded (the first one always is)."""
        config = self._pinned_manifest().config
        return {s: s in config.dense for s in config.strategies}

    def system(self) -> System:
        """The system this store is searched with unless another is named (``--system``'s)."""
        from convlab.systems.system import System

        return System.from_dict(self._pinned_manifest().system)

    def search(
        self,
        query: str,
        *,
        system: System | str | None = None,
        k: int = K,
        options: SearchOptions | None = None,
    ) -> pl.DataFrame:
        """The ``k`` best docs for ``query`` under ``system`` (default: :meth:`system`).

        :func:`convlab.systems.search.search_system`, which ranks with the parts ``eval.run``
        ranks with (``eval.run`` calls them itself); indexes and query embedder loaded once.
        Each hit carries its match, the best message of its doc by the system's own scoring,
        and where it is (:func:`convlab.store.hits.placed`).

        Args:
            query: the text to search for.
            system: a :class:`~convlab.systems.system.System` or a name
                :func:`convlab.systems.resolve_system` knows; its views must be held here.
            k: docs to return.
            options: filters and rankers, used instead of the system's own.

        Raises:
            ValueError: a system whose views this store does not hold (naming them).

        Example:
            >>> convlab.open_store("~/.convlab/store").search("nginx", k=5)  # doctest: +SKIP
        """
        from convlab.store.search import StoreSearch

        if self._searcher is None:
            self._searcher = StoreSearch(self)
        return self._searcher.search(query, system=system, k=k, options=options)

    def index(self, strategy: str | None = None) -> VectorIndex:
        """A stored index of an embedded strategy (None: the first), vectors of unit length.

        Raises:
            ValueError: a strategy the store does not hold embedded.
        """
        from convlab.index import VectorIndex

        version = self._pin()
        directory = self._part(strategy, "index", embedded=True)
        self._check([(directory / name).relative_to(version).as_posix() for name in mf.INDEX_FILES])
        # this index's vectors, in slices: no copy of them
        mf.check_norms(self.directory, version, rows=None, index=directory)
        try:
            index = VectorIndex.load(directory)
        except Exception as exc:  # numpy, FAISS and polars each raise their own types
            what = f"unreadable ({type(exc).__name__}: {exc})"
            raise mf.damaged(self.directory, directory, what, verify=True) from exc
        index.guard = mf.row_guard(self.directory, version, self._pinned_manifest(), directory)
        return index

    def conversation_ids(self, prefix: str) -> list[str]:
        """The conversations whose id starts with ``prefix``, sorted (an equal id alone)."""
        ids = self.frame("conversations")["conversation_id"]
        if (ids == prefix).any():
            return [prefix]
        return sorted(ids.filter(ids.str.starts_with(prefix)).to_list())

    def bm25(self, strategy: str | None = None) -> BM25Index | None:
        """The stored BM25 index over a strategy's units (None: the first); None without units.

        Raises:
            StoreDamaged: the stored BM25 files cannot be read.
            ValueError: a strategy the store does not hold.
        """
        from convlab.index.bm25 import BM25Index

        directory = self._part(strategy, "bm25", embedded=False)
        if not self._pinned_manifest().bm25 or not directory.exists():
            return None  # no unit to index (checked files are all there: see _pin)
        prefix = f"{directory.relative_to(self._pin()).as_posix()}/"
        self._check([r for r in self._pinned_manifest().version_files if r.startswith(prefix)])
        try:
            return BM25Index.load(directory)
        except Exception as exc:  # bm25s raises numpy, json and OS errors
            raise self._damaged(directory, f"unreadable ({type(exc).__name__}: {exc})") from exc

    def _part(self, strategy: str | None, part: str, *, embedded: bool) -> Path:
        """Where a strategy's ``index`` or ``bm25`` is: the first's on top, others' in views/."""
        version = self._pin()
        held = self.strategies()
        first = next(iter(held))
        strategy = strategy or first
        if strategy not in held or (embedded and not held[strategy]):
            what = "embedded " if embedded else ""
            have = [s for s, e in held.items() if e or not embedded]
            raise ValueError(
                f"{self.directory} holds no {what}strategy {strategy!r}; it holds "
                f"{', '.join(have)} (`convlab index --system` chooses them)"
            )
        return version / part if strategy == first else version / "views" / strategy / part

    def verify(self) -> Verified:
        """Check the size and SHA-256 of every file of the pinned version.

        Raises:
            StoreDamaged: the first file that is missing, of the wrong size or content.
        """
        version = self._pin()
        verified = mf.check_files(self.directory, version, self._pinned_manifest(), check="full")
        mf.check_norms(self.directory, version, rows=None)
        return verified

    def refresh(self) -> None:
        """Release the pinned version: the next read pins the version live then."""
        if self._pin_handle is not None:
            self._pin_handle.close()
        self._pinned, self._pin_handle, self._manifest = None, None, None
        self._searcher, self._checked, self._frames = None, set(), {}

    close = refresh

    def _check(self, rels: list[str]) -> None:
        """Check files of the pinned version before a read uses them (once each)."""
        todo = [r for r in rels if r not in self._checked]
        manifest = self._pinned_manifest()
        mf.check_sample(self.directory, self._pin(), manifest, todo, blocks=mf.SEARCH_BLOCKS)
        self._checked.update(todo)

    def _damaged(self, path: Path, what: str) -> StoreDamaged:
        return mf.damaged(self.directory, path, what)

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
            handle = hold_shared(version / READERS)
            if (version / MANIFEST).is_file():
                try:
                    manifest = mf.read_manifest(self.directory, version)
                    mf.check_files(self.directory, version, manifest, check="sizes")
                except BaseException:
                    if handle is not None:
                        handle.close()
                    raise
                self._pinned, self._pin_handle, self._manifest = version, handle, manifest
                return version
            if handle is not None:
                handle.close()
        raise RuntimeError(f"{self.directory}: the live version kept changing; try again")

    # -- writing ------------------------------------------------------------------------------
    def lock(self, *, wait: bool = False) -> FileLock:
        """The store's write lock (acquire it with ``with``); the folder is made a store first.

        Raises:
            NotAStore: not a store's folder (:func:`convlab.store.owner.check_store`).
            StoreDamaged: the lock file is a FIFO, a device or another non-regular file.
        """
        check_store(self.directory)  # a folder or marker not the store's own: nothing written
        claim(self.directory)
        check_lock_file(self.directory / ".lock")
        return FileLock(str(self.directory / ".lock"), timeout=-1 if wait else 0)

    def update(
        self,
        paths: Sequence[str | Path],
        *,
        config: StoreConfig,
        embedder: Embedder,
        rebuild: bool = False,
        wait: bool = False,
        progress: bool | None = None,
        log: Callable[[str], None] | None = None,
        engine: str | Engine = "local",
        missing_ok: bool = False,
    ) -> IndexSummary:
        """Bring the store up to date with the transcripts under ``paths``.

        The live version is checked first (:data:`convlab.store.manifest.CHECK_ON_INDEX`); a
        damaged one is rebuilt, its vectors from the embedding cache; one of an older format is
        refused unless ``rebuild``. Conversations whose files went, shrank or were rewritten are
        kept, detached (:mod:`convlab.store.history`). This object then reads the live version.

        Args:
            paths: files or directories to index.
            config: strategy, max_tokens, index kind, redaction and content policy.
            embedder: the :class:`convlab.protocols.Embedder` (wrapped here in the store's cache).
            rebuild: start from scratch even when settings match.
            wait: wait for another indexer instead of refusing.
            progress: show progress bars (None = when attached to a terminal).
            log: where to send progress lines.
            engine: where the embedding runs (a key of ``convlab.engines.ENGINES`` or an engine).
            missing_ok: a missing path is a folder emptied (kept, detached), not an error.

        Raises:
            StoreLocked: another indexer is writing (and not ``wait``).
            StoreMismatch, StoreOutdated: other settings, an older format (pass ``rebuild``).
            NotAStore: a file, or a folder of other things (nothing touched).
            StoreFull: the disk filled up; the previous version is intact and still live.
        """
        from convlab.store.update import run_update

        for p in [] if missing_ok else paths:
            if not Path(p).expanduser().exists():
                raise FileNotFoundError(f"no such file or directory: {p}")
        try:
            lock = self.lock(wait=wait)  # refuses a folder that is not a store
            try:
                lock.acquire()
            except Timeout:
                raise StoreLocked(
                    f"another `convlab index` is writing {self.directory}; wait for it or "
                    "pass --wait"
                ) from None
            self._log = log or (lambda _: None)
            try:
                return run_update(
                    self, paths, config, embedder, rebuild, self._log, engine, missing_ok
                )
            finally:
                self._log = lambda _: None
                lock.release()
        except Exception as exc:
            if not disk_full(exc):
                raise
            raise StoreFull(full_message(self.directory, self.current, exc)) from exc

    # -- the writer interface (convlab.store.update.StoreWriter): what an update calls ---------
    @property
    def store_id(self) -> str:
        """The id of the store's marker, which every version it writes records."""
        return marker_id(self.directory)

    def open_for_update(
        self, log: Callable[[str], None], *, rebuild: bool
    ) -> tuple[StoreManifest | None, str]:
        """The live manifest (None: none, unreadable or ``rebuild``) and what is damaged ('').

        Raises:
            StoreOutdated: a store of an older format, and not ``rebuild``.
        """
        self.refresh()
        try:
            version = self._pin()
            manifest = self._pinned_manifest()
            mf.check_files(self.directory, version, manifest, check=CHECK_ON_INDEX)
            if CHECK_ON_INDEX != "sizes":
                rows = None if CHECK_ON_INDEX == "full" else NORM_ROWS
                mf.check_norms(self.directory, version, rows=rows)
        except FileNotFoundError:
            return None, ""
        except StoreOutdated as exc:
            if not rebuild:
                raise
            log(f"rebuilding: {str(exc).split('; run `convlab index')[0]}")
            return None, ""
        except StoreDamaged as exc:
            log(f"repairing: {exc}")
            try:
                found: StoreManifest | None = mf.read_manifest(self.directory, self._live())
            except (StoreDamaged, FileNotFoundError):
                found = None
            self.refresh()
            return found, str(exc).split("; run `convlab index")[0]
        return manifest, ""

    def write_version(
        self,
        manifest: StoreManifest,
        frames: dict[str, pl.DataFrame],
        index: VectorIndex,
        bm25: BM25Index | None,
        views: dict[str, tuple[VectorIndex | None, BM25Index | None]] | None = None,
    ) -> None:
        """Write a new version of these frames and indexes, switch to it, remove leftovers."""
        write_version(self.directory, manifest, frames, index, bm25, views)
        self.refresh()  # release the old version, read the new one from now on
        self._pin()
        self.remove_leftovers()

    def write_manifest(self, manifest: StoreManifest) -> None:
        """Replace the live version's manifest (its files unchanged: files seen, system)."""
        self._manifest = write_manifest(self._pin(), manifest)

    def remove_leftovers(self) -> None:
        """Delete what killed runs left and the versions the live manifest lists, when unread."""
        try:
            live: Path | None = self._live()
        except (FileNotFoundError, StoreDamaged):
            live = None
        remove_leftovers(
            self.directory, (live, self._pinned), store_id=self.store_id, log=self._log
        )


def open_store(directory: str | Path) -> Store:
    """The store ``convlab index`` wrote in ``directory``, to search and read.

    Raises:
        FileNotFoundError: no store there (naming the command that builds one).

    Example:
        >>> store = open_store("~/.convlab/store")  # doctest: +SKIP
        >>> store.search("nginx websockets", system="bm25:message")  # doctest: +SKIP
    """
    store = Store(directory)
    store.manifest()  # pins the live version: a missing or damaged store fails here
    return store
