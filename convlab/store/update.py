"""The incremental update of a store: read what changed, keep what did not, build the rest.

An update reads only files whose size, mtime or content hash changed (:mod:`convlab.store.scan`),
keeps the rows of conversations whose content fingerprint is unchanged, rebuilds units for the
others through the one build recipe (:func:`convlab.build.build_indexes`, whose embedding cache
means only new texts are embedded: the idea of the design documents'
``last_embedded_turn_number`` and content hash, at the level of unit texts), keeps conversations
whose files went, shrank or were rewritten as detached history (:mod:`convlab.store.history`),
and writes a new version beside the old one through the store's public writer interface
(:class:`StoreWriter`, which :class:`convlab.store.Store` is).
:func:`convlab.store.prune.prune` removes conversations the user names, through
:func:`write_plan`.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import msgspec
import polars as pl

from convlab._version import __version__
from convlab.build import BuiltIndex, build_indexes
from convlab.built import Embedded
from convlab.embed import CachedEmbedder, embedder_name
from convlab.loaders import Corpus
from convlab.loaders.registry import load_files
from convlab.pipeline.redact import RULES_VERSION, redact_corpus
from convlab.pipeline.unit_costs import messages_with_text, unit_costs
from convlab.protocols import Embedder
from convlab.store.config import IndexSummary, StoreConfig, check_settings
from convlab.store.errors import StoreMismatch
from convlab.store.format import StoreManifest
from convlab.store.history import (
    DIGEST,
    Changes,
    classify,
    fingerprints,
    message_digests,
    renamed,
    with_digests,
)
from convlab.store.manifest import FRAMES
from convlab.store.scan import Scan, record_conversations, scan
from convlab.store.versions import crash_point

if TYPE_CHECKING:
    from convlab.engines import Engine
    from convlab.index import VectorIndex
    from convlab.index.bm25 import BM25Index

__all__ = ["Plan", "StoreWriter", "load_empty", "run_update", "write_plan"]


class StoreWriter(Protocol):
    """What an update reads and writes of a store: the public writer interface of ``Store``.

    A structural type, so that this module, which ``Store.update`` calls, does not import the
    module that defines the store.
    """

    @property
    def directory(self) -> Path:
        """The store's folder."""
        ...

    @property
    def store_id(self) -> str:
        """The id of the store's marker."""
        ...

    def exists(self) -> bool:
        """Whether the store holds a complete version."""
        ...

    def manifest(self) -> StoreManifest:
        """The pinned version's manifest."""
        ...

    def frame(self, name: str) -> pl.DataFrame:
        """A frame of the live version."""
        ...

    def index(self, strategy: str | None = None) -> VectorIndex:
        """A strategy's vector index of the live version."""
        ...

    def open_for_update(
        self, log: Callable[[str], None], *, rebuild: bool
    ) -> tuple[StoreManifest | None, str]:
        """The live manifest (None: none, unreadable or rebuilt) and what is damaged ('')."""
        ...

    def write_version(
        self,
        manifest: StoreManifest,
        frames: dict[str, pl.DataFrame],
        index: VectorIndex,
        bm25: BM25Index | None,
        views: dict[str, tuple[VectorIndex | None, BM25Index | None]] | None = None,
    ) -> None:
        """Write a new version and switch to it."""
        ...

    def write_manifest(self, manifest: StoreManifest) -> None:
        """Replace the live version's manifest."""
        ...

    def remove_leftovers(self) -> None:
        """Delete temporary and unused versions."""
        ...


@dataclass(frozen=True, slots=True)
class Plan:
    """What an update changes: the conversations to build, drop and rename, and what it keeps."""

    old_manifest: StoreManifest | None
    roots: list[Path]
    scan: Scan
    corpus: Corpus
    digests: pl.DataFrame
    changes: Changes
    prints: dict[str, str]

    def nothing_to_do(self) -> bool:
        """No conversation added, rebuilt or renamed (the rows stay; the manifest may change)."""
        c = self.changes
        return self.old_manifest is not None and not (c.build or c.drop or c.rename)


def run_update(
    store: StoreWriter,
    paths: Sequence[str | Path],
    config: StoreConfig,
    embedder: Embedder,
    rebuild: bool,
    log: Callable[[str], None],
    engine: str | Engine = "local",
    missing_ok: bool = False,
) -> IndexSummary:
    """Bring ``store`` up to date with the transcripts under ``paths`` (its lock held).

    See :meth:`convlab.store.Store.update` for the contract.
    """
    from convlab.engines import get_engine

    eng = get_engine(engine)  # an unknown name or a missing extra fails before any work
    try:
        started = time.perf_counter()
        summary = IndexSummary()
        old_manifest, reread = _open(store, config, embedder, rebuild, log, summary)
        plan = _plan(store, old_manifest, paths, config, summary, reread, missing_ok)
        if plan.nothing_to_do() and old_manifest is not None:
            system = config.resolved_system().as_dict()
            detached = plan.changes.detached
            if (
                plan.scan.changed
                or plan.scan.gone
                or old_manifest.system != system
                or old_manifest.detached != detached
            ):
                # content identical (a transcript rewritten in place or moved), a file gone or
                # shrunk (its conversations kept, detached), or the same views searched with
                # another system: no index changes
                store.write_manifest(
                    msgspec.structs.replace(
                        old_manifest, system=system, files=plan.scan.files, detached=detached
                    )
                )
            summary.seconds = time.perf_counter() - started
            _fill_counts(store, summary)
            return summary
        crash_point("after_load")
        write_plan(store, plan, config, embedder, eng, summary)
        summary.seconds = time.perf_counter() - started
        _fill_counts(store, summary)
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
) -> tuple[StoreManifest | None, bool]:
    """Check the live version: its manifest when an update may build on it, and reread or not.

    The manifest is None after ``rebuild`` or when the live version is damaged (it is
    rebuilt). When the redaction rules changed, every file is read again and only the detached
    conversations (whose transcripts are not there to read) keep their stored rows.

    Raises:
        StoreOutdated: the live version is of an older format and not ``rebuild``.
        StoreMismatch: it was built with another model or other settings, or ``rebuild`` would
            lose detached conversations.
    """
    live_manifest, damage = store.open_for_update(log, rebuild=rebuild)
    if live_manifest is not None and not rebuild:  # before anything is removed
        check_settings(store.directory, live_manifest, config, embedder)
    if live_manifest is not None and (rebuild or damage) and live_manifest.detached:
        n = len(live_manifest.detached)
        if not damage:
            raise StoreMismatch(
                f"{store.directory} holds {n} detached conversations whose transcripts changed "
                "or went; --rebuild reads only the transcripts and would lose them: "
                f"`convlab prune --store {store.directory} --detached` first to let them go"
            )
        log(f"repairing: {n} detached conversations cannot be read again from transcripts")
    store.remove_leftovers()
    summary.repaired = damage
    rules_changed = (
        live_manifest is not None
        and config.redact != "none"
        and live_manifest.redact_rules != RULES_VERSION
    )
    if rules_changed and not (rebuild or damage):
        log("the redaction rules changed since the last index: every file is read again")
        summary.reread = "redaction rules changed"
    if rebuild or damage:
        return None, False
    return live_manifest, rules_changed


def _plan(
    store: StoreWriter,
    old_manifest: StoreManifest | None,
    paths: Sequence[str | Path],
    config: StoreConfig,
    summary: IndexSummary,
    reread: bool,
    missing_ok: bool,
) -> Plan:
    """Read the changed files and decide, by content, what to keep, build, detach and version.

    ``reread``: every file is read again (new redaction rules), and every stored conversation
    but the detached ones is rebuilt from it. ``missing_ok``: a root not there holds no file.
    """
    roots = [Path(os.path.abspath(Path(p).expanduser())) for p in paths]  # links kept
    for r in [] if missing_ok else roots:
        if not r.exists():
            raise FileNotFoundError(f"no such file or directory: {r}")
    old_files = old_manifest.files if old_manifest and not reread else {}
    found = scan(roots, old_files, summary)
    loaded = load_files(found.changed) if found.changed else load_empty()
    corpus = redact_corpus(loaded, config.redact)
    digests = message_digests(corpus)
    new_prints = fingerprints(corpus, digests)
    old_prints = old_manifest.fingerprints if old_manifest else {}
    detached = old_manifest.detached if old_manifest else {}
    if reread:  # only the detached keep their rows; every other one is built again
        old_prints = {c: fp for c, fp in old_prints.items() if c in detached}
    record_conversations(found, corpus)
    summary.files_read = len(found.changed)
    changed = [c for c in new_prints if c in old_prints and new_prints[c] != old_prints[c]]
    old_digests = (
        store.frame("messages").filter(pl.col("conversation_id").is_in(changed))
        if changed
        else digests.clear()
    )
    sources = {
        c: p
        for p, rec in (old_manifest.files if old_manifest else {}).items()
        for c in rec.conversations
    }
    changes = classify(
        old_prints=old_prints,
        new_prints=new_prints,
        stale=found.stale,
        old_digests=old_digests.select("conversation_id", "message_index", DIGEST),
        new_digests=digests,
        detached=detached,
        sources=sources,
    )
    if reread and old_manifest is not None:
        changes.drop |= set(old_manifest.fingerprints) - set(detached)
    summary.conversations_added = len(changes.build - set(old_prints))
    summary.conversations_changed = len(changes.build & set(old_prints))
    summary.conversations_detached = changes.newly_detached
    prints = {c: fp for c, fp in old_prints.items() if c not in changes.drop}
    prints.update({new: old_prints[old] for old, new in changes.rename.items()})
    prints.update({c: new_prints[c] for c in changes.build})
    return Plan(old_manifest, roots, found, corpus, digests, changes, prints)


def write_plan(
    store: StoreWriter,
    plan: Plan,
    config: StoreConfig,
    embedder: Embedder,
    eng: Engine,
    summary: IndexSummary,
) -> None:
    """Build the fresh conversations on the kept rows (one recipe) and write a new version."""
    cached = CachedEmbedder(embedder, store.directory / "cache")
    changes = plan.changes
    if plan.old_manifest is not None:
        frames, keep = _kept(store, changes, config.held(), cached.dimension)
    else:
        frames, keep = {}, None
    fresh = plan.corpus.filter_conversations(changes.build) if changes.build else load_empty()
    cached.clean()  # temporary segments of killed runs
    strategies = list(config.strategies)
    every = build_indexes(
        fresh,
        config.units(),
        embedder=cached,
        index=config.index,
        dense=config.dense,
        lexical=strategies,
        engine=eng,
        keep=keep,
        corpus_fingerprint=hashlib.sha256(
            json.dumps(plan.prints, sort_keys=True).encode()
        ).hexdigest(),
    )
    built = every[strategies[0]]
    summary.texts_embedded = int(built.manifest.embedding["embedded"])
    summary.texts_from_cache = int(built.manifest.embedding["from_cache"])
    crash_point("after_embed")
    new = {
        "conversations": fresh.conversations,
        "messages": with_digests(fresh.messages, plan.digests),
        "turns": built.turns,
        "chunks": built.chunks,
    }
    for name, frame in new.items():
        parts = [f for f in (frames.get(name), frame) if f is not None and f.height]
        frames[name] = pl.concat(parts, how="vertical_relaxed") if parts else frame
    frames["units"] = pl.concat([every[s].units for s in strategies])
    views = {
        s: (every[s].index if s in config.dense else None, every[s].bm25) for s in strategies[1:]
    }
    manifest = _manifest(store.store_id, plan, config, embedder, cached, eng, every, frames)
    store.write_version(manifest, {n: frames[n] for n in FRAMES}, built.index, built.bm25, views)
    summary.wrote_version = True


def _manifest(
    store_id: str,
    plan: Plan,
    config: StoreConfig,
    embedder: Embedder,
    cached: CachedEmbedder,
    eng: Engine,
    every: dict[str, BuiltIndex],
    frames: dict[str, pl.DataFrame],
) -> StoreManifest:
    """The new version's manifest (its files' digests and checksum are added when written)."""
    built = every[config.strategies[0]]
    old_roots = plan.old_manifest.roots if plan.old_manifest else []
    return StoreManifest(
        store_id=store_id,
        version="",  # the version's name, given when it is written
        convlab_version=__version__,
        model_id=embedder.model_id,
        embedder=embedder_name(embedder),
        dimension=int(embedder.dimension),
        device=cached.device,  # provenance: the vectors do not depend on it
        engine=eng.describe(),
        config=config.settings(),
        system=config.resolved_system().as_dict(),
        redact_rules=RULES_VERSION,
        roots=sorted({*map(str, plan.roots), *old_roots}),
        files=plan.scan.files,
        fingerprints=plan.prints,
        detached=plan.changes.detached,
        counts={n: frames[n].height for n in FRAMES},
        bm25=built.bm25 is not None,
        updated_at=time.time(),
        # for convlab stats: each strategy's units and embedding cost, and the update's
        # embedding pass (its seconds and cache counts)
        unit_costs=unit_costs(
            {s: every[s].units for s in config.strategies},
            messages_with_text(frames["chunks"]),
            dense=config.dense,
        ).to_dicts(),
        embedding={"seconds": built.manifest.seconds["embed"], **built.manifest.embedding},
    )


def _fill_counts(store: StoreWriter, summary: IndexSummary) -> None:
    """Copy the live version's counts of conversations, turns and units into ``summary``."""
    if store.exists():
        counts = store.manifest().counts
        summary.conversations = counts.get("conversations", 0)
        summary.turns = counts.get("turns", 0)
        summary.units = counts.get("units", 0)


def _kept(
    store: StoreWriter, changes: Changes, held: dict[str, bool], dimension: int
) -> tuple[dict[str, pl.DataFrame], dict[str, Embedded]]:
    """The live version's rows that stay, and the kept units, per strategy held.

    The rows of every conversation but those dropped, an earlier version's under its new id
    (:attr:`Changes.rename`). Per strategy held: its kept units and their vectors (zeros for a
    strategy searched by BM25 alone).
    """
    import numpy as np

    gone = sorted(changes.drop - set(changes.rename))
    frames = {
        name: renamed(
            store.frame(name).filter(~pl.col("conversation_id").is_in(gone)), changes.rename
        )
        for name in FRAMES
    }
    units = frames.pop("units")
    keep = {}
    for strategy, dense in held.items():
        if dense:
            old_index = store.index(strategy)
            rows = np.flatnonzero(~old_index.units["conversation_id"].is_in(gone).to_numpy())
            kept = renamed(old_index.units[rows], changes.rename)
            keep[strategy] = Embedded(kept, old_index.vectors(rows))
        else:
            mine = units.filter(pl.col("strategy") == strategy)
            keep[strategy] = Embedded(mine, np.zeros((mine.height, dimension), dtype=np.float32))
    return frames, keep


def load_empty() -> Corpus:
    """An empty corpus."""
    from convlab.loaders.base import CorpusBuilder

    return CorpusBuilder().build()
