"""The incremental update of a store: read what changed, keep what did not, build the rest.

An update reads only files whose size, mtime or content hash changed, keeps the rows of
conversations whose content fingerprint is unchanged, rebuilds units for the others through the
one build recipe (:func:`convlab.build.build_index`, whose embedding cache means only new texts
are embedded: the idea of the design documents' ``last_embedded_turn_number`` and content hash,
at the level of unit texts), drops conversations whose files are gone, and writes a new version
beside the old one (:func:`convlab.store.versions.write_version`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import polars as pl

from convlab._version import __version__
from convlab.build import Embedded, build_indexes
from convlab.embed import CachedEmbedder, embedder_name
from convlab.loaders import Corpus, LoadError
from convlab.loaders.registry import FORMATS, load_files
from convlab.paths import path_text
from convlab.pipeline.redact import RULES_VERSION, redact_corpus
from convlab.pipeline.unit_costs import messages_with_text, unit_costs
from convlab.protocols import Embedder
from convlab.store.config import IndexSummary, StoreConfig, StoreMismatch
from convlab.store.manifest import FRAMES, STORE_FORMAT
from convlab.store.versions import crash_point

if TYPE_CHECKING:
    from convlab.engines import Engine
    from convlab.index import VectorIndex
    from convlab.index.bm25 import BM25Index

__all__ = ["load_empty", "run_update"]


class StoreWriter(Protocol):
    """What an update reads and writes of a store: the writer interface of ``convlab.store.Store``.

    A structural type, so that this module, which ``Store.update`` calls, does not import the
    module that defines the store.
    """

    @property
    def directory(self) -> Path:
        """The store's folder."""
        ...

    def frame(self, name: str) -> pl.DataFrame:
        """A frame of the live version."""
        ...

    def index(self, strategy: str | None = None) -> VectorIndex:
        """A strategy's vector index of the live version."""
        ...

    def open_for_update(self, log: Callable[[str], None]) -> tuple[dict[str, Any] | None, str]:
        """The live manifest (None: none or unreadable) and what is damaged ('' if nothing)."""
        ...

    def write_version(
        self,
        manifest: dict[str, Any],
        frames: dict[str, pl.DataFrame],
        index: VectorIndex,
        bm25: BM25Index | None,
        views: dict[str, tuple[VectorIndex | None, BM25Index | None]] | None = None,
    ) -> None:
        """Write a new version and switch to it."""
        ...

    def write_manifest_only(self, manifest: dict[str, Any], files: dict[str, Any]) -> None:
        """Record ``files`` in the live manifest."""
        ...

    def remove_leftovers(self) -> None:
        """Delete temporary and unused versions."""
        ...

    def fill_counts(self, summary: IndexSummary) -> None:
        """Copy the live counts into ``summary``."""
        ...


Files = dict[str, dict[str, Any]]
"""A manifest's ``files``: path -> size, mtime_ns, sha256, conversations, skipped."""


@dataclass(slots=True)
class _Scan:
    """What the walk of the roots found against the files indexed before."""

    files: Files = field(default_factory=dict)
    changed: list[Path] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    stale: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What an update changes: the conversations to build and to drop, and what it keeps."""

    old_manifest: dict[str, Any] | None
    roots: list[Path]
    scan: _Scan
    corpus: Corpus
    fresh: set[str]
    drop: set[str]
    prints: dict[str, str]

    def nothing_to_do(self) -> bool:
        """No conversation added, changed or removed (``drop`` holds them all), no file gone."""
        return not self.drop and self.old_manifest is not None and not self.scan.gone


def run_update(
    store: StoreWriter,
    paths: Sequence[str | Path],
    config: StoreConfig,
    embedder: Embedder,
    rebuild: bool,
    log: Callable[[str], None],
    engine: str | Engine = "local",
) -> IndexSummary:
    """Bring ``store`` up to date with the transcripts under ``paths`` (its lock held).

    See :meth:`convlab.store.Store.update` for the contract.
    """
    from convlab.engines import get_engine

    eng = get_engine(engine)  # an unknown name or a missing extra fails before any work
    try:
        started = time.perf_counter()
        summary = IndexSummary()
        old_manifest = _open(store, config, embedder, rebuild, log, summary)
        plan = _plan(old_manifest, paths, config, summary)
        needs_bm25 = old_manifest is not None and "bm25" not in old_manifest
        if needs_bm25:
            log("this store has no BM25 index yet: adding one (no text is embedded again)")
        if plan.nothing_to_do() and not needs_bm25:
            system = config.resolved_system().as_dict()
            if plan.scan.changed or (old_manifest or {}).get("system") != system:
                # content identical (a transcript rewritten in place), or the same views
                # searched with another system: no index changes
                store.write_manifest_only(
                    {**(old_manifest or {}), "system": system}, plan.scan.files
                )
            summary.seconds = time.perf_counter() - started
            store.fill_counts(summary)
            return summary
        crash_point("after_load")
        _write(store, plan, config, embedder, eng, summary)
        summary.seconds = time.perf_counter() - started
        store.fill_counts(summary)
        summary.skipped += [
            (r["source_path"], r["source_line"], r["reason"])
            for r in plan.corpus.report.skipped.iter_rows(named=True)
        ]
        return summary
    finally:
        if isinstance(engine, str):
            eng.close()


def _open(
    store: StoreWriter,
    config: StoreConfig,
    embedder: Embedder,
    rebuild: bool,
    log: Callable[[str], None],
    summary: IndexSummary,
) -> dict[str, Any] | None:
    """Check the live version; its manifest when the update may build on it, else None.

    None after ``rebuild``, when the live version is damaged (it is rebuilt) or when the
    redaction rules changed (every file is read again).
    """
    live_manifest, damage = store.open_for_update(log)
    if live_manifest is not None and not rebuild:  # before anything is removed
        check_settings(store.directory, live_manifest, config, embedder)
    store.remove_leftovers()
    summary.repaired = damage
    rules_changed = (
        live_manifest is not None
        and config.redact != "none"
        and live_manifest.get("redact_rules") != RULES_VERSION
    )
    if rules_changed and not (rebuild or damage):
        log("the redaction rules changed since the last index: every file is read again")
        summary.reread = "redaction rules changed"
    return None if (rebuild or damage or rules_changed) else live_manifest


def _plan(
    old_manifest: dict[str, Any] | None,
    paths: Sequence[str | Path],
    config: StoreConfig,
    summary: IndexSummary,
) -> _Plan:
    """Read the changed files and decide, by content fingerprint, what to keep and rebuild."""
    roots = [Path(p).expanduser().resolve() for p in paths]
    for r in roots:
        if not r.exists():
            raise FileNotFoundError(f"no such file or directory: {r}")
    old_files: Files = (old_manifest or {}).get("files", {})
    scan = _scan(roots, old_files, summary)
    loaded = load_files(scan.changed) if scan.changed else load_empty()
    corpus = redact_corpus(loaded, config.redact)
    new_prints = _fingerprints(corpus)
    old_prints: dict[str, str] = (old_manifest or {}).get("fingerprints", {})
    _record_conversations(scan, corpus)
    summary.files_read = len(scan.changed)

    reuse = {c for c, fp in new_prints.items() if old_prints.get(c) == fp}
    fresh = set(new_prints) - reuse
    summary.conversations_added = len(fresh - set(old_prints))
    summary.conversations_changed = len(fresh & set(old_prints))
    removed = (scan.stale - set(new_prints)) | (fresh & set(old_prints))
    summary.conversations_removed = len(scan.stale - set(new_prints))
    drop = removed | fresh
    prints = {c: fp for c, fp in old_prints.items() if c not in drop}
    prints.update({c: new_prints[c] for c in fresh})
    return _Plan(old_manifest, roots, scan, corpus, fresh, drop, prints)


def _write(
    store: StoreWriter,
    plan: _Plan,
    config: StoreConfig,
    embedder: Embedder,
    eng: Engine,
    summary: IndexSummary,
) -> None:
    """Build the fresh conversations on the kept rows (one recipe) and write a new version."""
    cached = CachedEmbedder(embedder, store.directory / "cache")
    if plan.old_manifest is not None:
        frames, keep = _kept(store, plan.drop, config.held(), cached.dimension)
    else:
        frames, keep = {}, None
    fresh = plan.corpus.filter_conversations(plan.fresh) if plan.fresh else load_empty()
    cached.clean()  # temporary segments of killed runs
    strategies = list(config.strategies)
    every = build_indexes(
        fresh,
        strategies,
        embedder=cached,
        policy=config.content_policy(),
        max_tokens=config.max_tokens,
        dense=config.dense,
        lexical=strategies,
        kind=config.index_kind,
        engine=eng,
        keep=keep,
        corpus_fingerprint=hashlib.sha256(
            json.dumps(plan.prints, sort_keys=True).encode()
        ).hexdigest(),
    )
    built = every[strategies[0]]
    summary.texts_embedded = int(built.manifest["embedding"]["embedded"])
    summary.texts_from_cache = int(built.manifest["embedding"]["from_cache"])
    crash_point("after_embed")

    new = {
        "conversations": fresh.conversations,
        "messages": fresh.messages,
        "turns": built.turns,
        "sentences": built.chunks,
    }
    for name, frame in new.items():
        parts = [f for f in (frames.get(name), frame) if f is not None and f.height]
        # diagonal: a store written before a column was added (agent_id, project) gets nulls
        frames[name] = pl.concat(parts, how="diagonal_relaxed") if parts else frame
    frames["units"] = pl.concat([every[s].units for s in strategies])
    views = {
        s: (every[s].index if s in config.dense else None, every[s].bm25) for s in strategies[1:]
    }
    manifest = {
        "format": STORE_FORMAT,
        "convlab_version": __version__,
        "model_id": embedder.model_id,
        "embedder": embedder_name(embedder),
        "dimension": int(embedder.dimension),
        "device": cached.device,  # provenance: the vectors do not depend on it
        "engine": eng.describe(),
        "config": config.as_dict(),
        "system": config.resolved_system().as_dict(),
        "redact_rules": RULES_VERSION,
        "roots": sorted({*map(str, plan.roots), *(plan.old_manifest or {}).get("roots", [])}),
        "files": plan.scan.files,
        "fingerprints": plan.prints,
        "counts": {n: frames[n].height for n in FRAMES},
        "bm25": built.bm25 is not None,
        "updated_at": time.time(),
        # for convlab stats: each strategy's units and embedding cost, and the update's
        # embedding pass (its seconds and cache counts)
        "unit_costs": unit_costs(
            {s: every[s].units for s in strategies},
            messages_with_text(frames["sentences"]),
            dense=config.dense,
        ).to_dicts(),
        "embedding": {"seconds": built.manifest["seconds"]["embed"], **built.manifest["embedding"]},
    }
    store.write_version(manifest, {n: frames[n] for n in FRAMES}, built.index, built.bm25, views)
    summary.wrote_version = True


def check_settings(
    directory: Path, manifest: dict[str, Any], config: StoreConfig, embedder: Embedder
) -> None:
    """Refuse to update a store built with another model or other settings.

    Raises:
        StoreMismatch: naming the model or the settings that differ.
    """
    if manifest.get("model_id") != embedder.model_id:
        raise StoreMismatch(
            f"{directory} was built with model {manifest.get('model_id')!r}, not "
            f"{embedder.model_id!r}; pass --rebuild to start over"
        )
    old = dict(manifest.get("config", {}))
    if "budget" in old and "max_tokens" not in old:  # stores written before the rename
        old["max_tokens"] = old.pop("budget")
    if "strategy" in old:  # stores of one strategy: its units embedded, BM25 beside
        old["strategies"] = old["dense"] = [old.pop("strategy")]
    new = config.as_dict()
    if old != new:
        diff = [k for k in new if old.get(k) != new[k]]
        held = ""
        if "strategies" in diff or "dense" in diff:
            held = (
                f": it holds {_held_text(old)}, system "
                f"{config.resolved_system().name!r} needs {_held_text(new)}"
            )
        raise StoreMismatch(
            f"{directory} was built with other settings ({', '.join(diff)}){held}; "
            "pass --rebuild to start over"
        )


def _held_text(config: dict[str, Any]) -> str:
    dense = config.get("dense", [])
    return ", ".join(
        f"{s}{'' if s in dense else ' (BM25 only)'}" for s in config.get("strategies", [])
    )


def _scan(roots: list[Path], old_files: Files, summary: IndexSummary) -> _Scan:
    """Which files changed (size, mtime, then content hash), which are gone, which are stale.

    A conversation spread over several files (a resumed session) is re-read whole: the other
    files of a stale conversation are added to ``changed``.
    """
    scan = _Scan()
    for f in list(_candidate_files(roots, summary.skipped)):
        try:  # the file may have gone or changed kind since the walk: a skip, not a crash
            st = f.stat()
            rec = old_files.get(str(f))
            if rec and rec["size"] == st.st_size and rec["mtime_ns"] == st.st_mtime_ns:
                scan.files[str(f)] = rec
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
            scan.files[str(f)] = {**rec, "mtime_ns": st.st_mtime_ns}
            summary.files_unchanged += 1
            continue
        scan.files[str(f)] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha}
        scan.changed.append(f)
    # files indexed before, under these roots, and gone now
    scan.gone = [
        p
        for p in old_files
        if p not in scan.files and any(Path(p).is_relative_to(r) or Path(p) == r for r in roots)
    ]
    scan.files.update(
        {p: rec for p, rec in old_files.items() if p not in scan.files and p not in scan.gone}
    )
    # conversations whose files changed or are gone are re-derived from the changed files
    for p in [*map(str, scan.changed), *scan.gone]:
        scan.stale.update(old_files.get(p, {}).get("conversations", []))
    by_conv: dict[str, set[str]] = {}
    for p, rec in old_files.items():
        for c in rec.get("conversations", []):
            by_conv.setdefault(c, set()).add(p)
    siblings = {
        Path(p)
        for c in scan.stale
        for p in by_conv.get(c, ())
        if p in scan.files and Path(p) not in scan.changed and Path(p).exists()
    }
    scan.changed.extend(sorted(siblings))
    return scan


def _record_conversations(scan: _Scan, corpus: Corpus) -> None:
    """Note in each changed file's record its conversations and how many records were skipped."""
    skipped_by_file: dict[str, int] = {}
    for path in corpus.report.skipped["source_path"]:
        skipped_by_file[path] = skipped_by_file.get(path, 0) + 1
    for f in scan.changed:
        stored = path_text(f)  # how the frames hold the name (a non-UTF-8 one escaped)
        scan.files[str(f)]["conversations"] = sorted(
            corpus.conversations.filter(pl.col("source_path") == stored)[
                "conversation_id"
            ].to_list()
        )
        scan.files[str(f)]["skipped"] = skipped_by_file.get(stored, 0)


def _kept(
    store: StoreWriter, drop: set[str], held: dict[str, bool], dimension: int
) -> tuple[dict[str, pl.DataFrame], dict[str, Embedded]]:
    """The live version's rows of every conversation not in ``drop``, and the kept units.

    Per strategy held: its kept units and their vectors (zeros for a strategy searched by BM25
    alone).
    """
    import numpy as np

    gone = sorted(drop)
    frames = {
        name: store.frame(name).filter(~pl.col("conversation_id").is_in(gone)) for name in FRAMES
    }
    units = frames.pop("units")
    keep = {}
    for strategy, dense in held.items():
        if dense:
            old_index = store.index(strategy)
            rows = np.flatnonzero(~old_index.units["conversation_id"].is_in(gone).to_numpy())
            keep[strategy] = Embedded(old_index.units[rows], old_index.vectors(rows))
        else:
            mine = units.filter(pl.col("strategy") == strategy)
            keep[strategy] = Embedded(mine, np.zeros((mine.height, dimension), dtype=np.float32))
    return frames, keep


def load_empty() -> Corpus:
    """An empty corpus."""
    from convlab.loaders.base import CorpusBuilder

    return CorpusBuilder().build()


def _candidate_files(
    roots: Iterable[Path], skipped: list[tuple[str, int, str]] | None = None
) -> Iterable[Path]:
    """The regular, readable files under ``roots`` (resolved), companions left out.

    Walked by the loaders' :func:`convlab.files.walk`, so ``convlab index`` skips what
    ``load()`` skips: FIFOs, devices and sockets are never opened (hashing one would block or
    never end), dangling and looping symlinks and unreadable files do not abort the index.
    Each such file is appended to ``skipped`` as ``(path, 0, reason)``.
    """
    from convlab.files import walk

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


def _file_sha256(path: Path) -> str:
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
