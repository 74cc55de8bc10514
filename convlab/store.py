"""A store: an index of real histories on disk, updated incrementally and never half-written.

Layout of a store directory::

    DIR/
      current -> v<N>          symlink to the live version, swapped atomically
      v<N>/manifest.json       settings, files seen (size, mtime, sha256), conversation fingerprints
      v<N>/conversations.parquet, turns.parquet, sentences.parquet, units.parquet
      v<N>/index/              convlab.index.VectorIndex (FAISS + units + its manifest)
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
"""

from __future__ import annotations

import hashlib
import json
import os
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
from convlab.loaders import Corpus
from convlab.loaders.registry import FORMATS, load_files

if TYPE_CHECKING:
    from convlab.engines import Engine

__all__ = [
    "IndexSummary",
    "Store",
    "StoreConfig",
    "StoreDamaged",
    "StoreLocked",
    "default_history_paths",
]

STORE_FORMAT = 1
REDACT_CHOICES = ("tool-output", "all", "none")


class StoreLocked(RuntimeError):
    """Another indexer holds the store's lock."""


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
        budget: the unit token budget.
        index_kind: ``flat`` (exact), ``hnsw`` or ``ivf``.
        redact: ``tool-output`` (tool results and tool-call inputs), ``all`` blocks, or ``none``.
        policy: the content policy as a dict (``ContentPolicy.as_dict()``).
    """

    strategy: str = "turn_pair"
    budget: int = 256
    index_kind: str = "flat"
    redact: str = "tool-output"
    policy: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.redact not in REDACT_CHOICES:
            raise ValueError(f"redact must be one of {', '.join(REDACT_CHOICES)}")
        if self.budget < 8:
            raise ValueError("budget must be at least 8 tokens")


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
        out.append(f"time: {self.seconds:.1f} s" + ("" if self.wrote_version else " (unchanged)"))
        return out


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
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


class Store:
    """An on-disk index of transcripts (a directory); see the module docstring for its layout.

    Args:
        directory: the store directory (created on the first update).
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory).expanduser()

    # -- reading ------------------------------------------------------------------------------
    @property
    def current(self) -> Path | None:
        """The live version directory, or None for an empty store."""
        link = self.directory / "current"
        if not link.is_symlink() and not link.exists():
            return None
        target = link.resolve()
        return target if (target / "manifest.json").is_file() else None

    def exists(self) -> bool:
        """Whether the store holds a complete version."""
        return self.current is not None

    def manifest(self) -> dict[str, Any]:
        """The live version's manifest.

        Raises:
            FileNotFoundError: the store is empty or missing.
        """
        cur = self._require()
        return json.loads((cur / "manifest.json").read_text())

    def frame(self, name: str) -> pl.DataFrame:
        """One of the stored frames: conversations, turns, sentences, units."""
        return pl.read_parquet(self._require() / f"{name}.parquet")

    def index(self) -> Any:
        """The stored :class:`convlab.index.VectorIndex`."""
        from convlab.index import VectorIndex

        return VectorIndex.load(self._require() / "index")

    def _require(self) -> Path:
        cur = self.current
        if cur is None:
            raise FileNotFoundError(
                f"no index at {self.directory}; build one with `convlab index PATH --store "
                f"{self.directory}`"
            )
        return cur

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
            ValueError: the store was built with other settings (pass ``rebuild=True``).
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
        self._remove_leftovers()
        summary = IndexSummary()
        old_manifest: dict[str, Any] | None = None
        if self.exists() and not rebuild:
            old_manifest = self.manifest()
            self._check_settings(old_manifest, config, embedder)
        roots = [Path(p).expanduser().resolve() for p in paths]
        for r in roots:
            if not r.exists():
                raise FileNotFoundError(f"no such file or directory: {r}")

        old_files: dict[str, dict[str, Any]] = (old_manifest or {}).get("files", {})
        seen = list(_candidate_files(roots))
        changed: list[Path] = []
        files: dict[str, dict[str, Any]] = {}
        for f in seen:
            st = f.stat()
            rec = old_files.get(str(f))
            if rec and rec["size"] == st.st_size and rec["mtime_ns"] == st.st_mtime_ns:
                files[str(f)] = rec
                summary.files_unchanged += 1
                continue
            sha = _file_sha256(f)
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
        for f in changed:
            files[str(f)]["conversations"] = sorted(
                corpus.conversations.filter(pl.col("source_path") == str(f))[
                    "conversation_id"
                ].to_list()
            )
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
            for name in ("conversations", "turns", "sentences", "units"):
                old = self.frame(name)
                frames[name] = old.filter(~pl.col("conversation_id").is_in(sorted(drop)))
            old_index = self.index()
            keep_rows = np.flatnonzero(
                ~old_index.units["conversation_id"].is_in(sorted(drop)).to_numpy()
            )
            old_vectors = old_index.vectors(keep_rows)
        for name in ("conversations", "turns", "sentences", "units"):
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
        summary.skipped = [
            (r["source_path"], r["source_line"], r["reason"])
            for r in corpus.report.skipped.iter_rows(named=True)
        ]
        return summary

    def _check_settings(self, manifest: dict[str, Any], config: StoreConfig, embedder: Any) -> None:
        if manifest.get("model_id") != embedder.model_id:
            raise ValueError(
                f"{self.directory} was built with model {manifest.get('model_id')!r}, not "
                f"{embedder.model_id!r}; pass --rebuild to start over"
            )
        if manifest.get("config") != asdict(config):
            old = manifest.get("config", {})
            diff = [k for k in asdict(config) if old.get(k) != asdict(config)[k]]
            raise ValueError(
                f"{self.directory} was built with other settings ({', '.join(diff)}); "
                "pass --rebuild to start over"
            )

    def _load(self, files: Sequence[Path], summary: IndexSummary) -> Corpus:
        return load_files(list(files)) if files else load_empty()

    def _derive(self, corpus: Corpus | None, config: StoreConfig) -> dict[str, pl.DataFrame]:
        from convlab import schema
        from convlab.policy import ContentPolicy
        from convlab.sentences import sentences as make_sentences
        from convlab.turns import turns as make_turns
        from convlab.units import units as make_units

        if corpus is None:
            return {
                "conversations": schema.empty(schema.CONVERSATIONS),
                "turns": schema.empty(schema.TURNS),
                "sentences": schema.empty(schema.SENTENCES),
                "units": schema.empty(schema.UNITS),
            }
        policy = ContentPolicy(**config.policy) if config.policy else ContentPolicy()
        turns = make_turns(corpus)
        sents = make_sentences(corpus, policy, turns=turns)
        units = make_units(
            sents, config.strategy, budget=config.budget, conversations=corpus.conversations
        )
        return {
            "conversations": corpus.conversations,
            "turns": turns,
            "sentences": sents,
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
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
        _fsync_dir(tmp)
        final = self.directory / name
        tmp.rename(final)
        _crash_point("before_switch")
        link_tmp = self.directory / f".current-{name}"
        link_tmp.symlink_to(name)
        os.replace(link_tmp, self.directory / "current")
        _fsync_dir(self.directory)
        _crash_point("after_switch")
        self._remove_leftovers()

    def _write_manifest_only(self, manifest: dict[str, Any], files: dict[str, Any]) -> None:
        cur = self._require()
        updated = {**manifest, "files": files}
        tmp = cur / ".manifest.json.tmp"
        tmp.write_text(json.dumps(updated, indent=1, sort_keys=True))
        os.replace(tmp, cur / "manifest.json")

    def _remove_leftovers(self) -> None:
        """Delete temporary versions of killed runs and versions that are no longer live."""
        if not self.directory.is_dir():
            return
        live = self.current
        for p in self.directory.iterdir():
            if p.name.startswith((".tmp-", ".current-")):
                if p.is_symlink() or p.is_file():
                    p.unlink(missing_ok=True)
                else:
                    shutil.rmtree(p, ignore_errors=True)
            elif p.name.startswith("v") and p.is_dir() and live is not None and p != live:
                shutil.rmtree(p, ignore_errors=True)

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


def _candidate_files(roots: Iterable[Path]) -> Iterable[Path]:
    from convlab.loaders.registry import _walk

    for root in roots:
        if root.is_file():
            yield root
            continue
        for f in _walk(root):
            if any(r.companion(f) for r in FORMATS.values()):
                continue
            yield f.resolve()


def _redact(corpus: Corpus, mode: str) -> Corpus:
    from convlab.redact import redact_blocks

    if mode == "none" or corpus.blocks.height == 0:
        return corpus
    types = None if mode == "all" else {"tool_result", "tool_call"}
    from dataclasses import replace

    return replace(corpus, blocks=redact_blocks(corpus.blocks, block_types=types))


def _fsync_dir(path: Path) -> None:
    for p in path.rglob("*") if path.is_dir() else []:
        if p.is_file():
            with p.open("rb") as fh:
                os.fsync(fh.fileno())
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
