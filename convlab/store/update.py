"""The incremental update of a store: read what changed, keep what did not, build the rest.

An update reads only files whose size, mtime or content hash changed (:mod:`convlab.store.scan`),
keeps the rows of conversations whose content fingerprint is unchanged, rebuilds units for the
others through the one build recipe (:func:`convlab.build.build_indexes`, whose embedding cache
means only new texts are embedded: the idea of the design documents'
``last_embedded_turn_number`` and content hash, at the level of unit texts), drops conversations
whose files are gone, and writes a new version beside the old one through the store's public
writer interface (:class:`StoreWriter`, which :class:`convlab.store.Store` is).
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
from convlab.store.config import IndexSummary, StoreConfig
from convlab.store.errors import StoreMismatch
from convlab.store.format import StoreManifest, StoreSettings
from convlab.store.manifest import FRAMES
from convlab.store.scan import Scan, fingerprints, record_conversations, scan
from convlab.store.versions import crash_point

if TYPE_CHECKING:
    from convlab.engines import Engine
    from convlab.index import VectorIndex
    from convlab.index.bm25 import BM25Index

__all__ = ["StoreWriter", "check_settings", "load_empty", "run_update"]


class StoreWriter(Protocol):
    """What an update reads and writes of a store: the public writer interface of ``Store``.

    A structural type, so that this module, which ``Store.update`` calls, does not import the
    module that defines the store.
    """

    @property
    def directory(self) -> Path:
        """The store's folder."""
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
class _Plan:
    """What an update changes: the conversations to build and to drop, and what it keeps."""

    old_manifest: StoreManifest | None
    roots: list[Path]
    scan: Scan
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
        if plan.nothing_to_do() and old_manifest is not None:
            system = config.resolved_system().as_dict()
            if plan.scan.changed or old_manifest.system != system:
                # content identical (a transcript rewritten in place), or the same views
                # searched with another system: no index changes
                store.write_manifest(
                    msgspec.structs.replace(old_manifest, system=system, files=plan.scan.files)
                )
            summary.seconds = time.perf_counter() - started
            _fill_counts(store, summary)
            return summary
        crash_point("after_load")
        _write(store, plan, config, embedder, eng, summary)
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
) -> StoreManifest | None:
    """Check the live version; its manifest when the update may build on it, else None.

    None after ``rebuild``, when the live version is damaged (it is rebuilt) or when the
    redaction rules changed (every file is read again).

    Raises:
        StoreOutdated: the live version is of an older format and not ``rebuild``.
        StoreMismatch: it was built with another model or other settings.
    """
    live_manifest, damage = store.open_for_update(log, rebuild=rebuild)
    if live_manifest is not None and not rebuild:  # before anything is removed
        check_settings(store.directory, live_manifest, config, embedder)
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
    return None if (rebuild or damage or rules_changed) else live_manifest


def _plan(
    old_manifest: StoreManifest | None,
    paths: Sequence[str | Path],
    config: StoreConfig,
    summary: IndexSummary,
) -> _Plan:
    """Read the changed files and decide, by content fingerprint, what to keep and rebuild."""
    roots = [Path(os.path.abspath(Path(p).expanduser())) for p in paths]  # links kept
    for r in roots:
        if not r.exists():
            raise FileNotFoundError(f"no such file or directory: {r}")
    found = scan(roots, old_manifest.files if old_manifest else {}, summary)
    loaded = load_files(found.changed) if found.changed else load_empty()
    corpus = redact_corpus(loaded, config.redact)
    new_prints = fingerprints(corpus)
    old_prints = old_manifest.fingerprints if old_manifest else {}
    record_conversations(found, corpus)
    summary.files_read = len(found.changed)

    reuse = {c for c, fp in new_prints.items() if old_prints.get(c) == fp}
    fresh = set(new_prints) - reuse
    summary.conversations_added = len(fresh - set(old_prints))
    summary.conversations_changed = len(fresh & set(old_prints))
    removed = (found.stale - set(new_prints)) | (fresh & set(old_prints))
    summary.conversations_removed = len(found.stale - set(new_prints))
    drop = removed | fresh
    prints = {c: fp for c, fp in old_prints.items() if c not in drop}
    prints.update({c: new_prints[c] for c in fresh})
    return _Plan(old_manifest, roots, found, corpus, fresh, drop, prints)


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
        "messages": fresh.messages,
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
    manifest = _manifest(plan, config, embedder, cached, eng, every, frames)
    store.write_version(manifest, {n: frames[n] for n in FRAMES}, built.index, built.bm25, views)
    summary.wrote_version = True


def _manifest(
    plan: _Plan,
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


def check_settings(
    directory: Path, manifest: StoreManifest, config: StoreConfig, embedder: Embedder
) -> None:
    """Refuse to update a store built with another model or other settings.

    Raises:
        StoreMismatch: naming the model or the settings that differ.
    """
    if manifest.model_id != embedder.model_id:
        raise StoreMismatch(
            f"{directory} was built with model {manifest.model_id!r}, not "
            f"{embedder.model_id!r}; pass --rebuild to start over"
        )
    old, new = manifest.config, config.settings()
    if old != new:
        diff = [f for f in new.__struct_fields__ if getattr(old, f) != getattr(new, f)]
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


def _held_text(settings: StoreSettings) -> str:
    return ", ".join(
        f"{s}{'' if s in settings.dense else ' (BM25 only)'}" for s in settings.strategies
    )


def _fill_counts(store: StoreWriter, summary: IndexSummary) -> None:
    """Copy the live version's counts of conversations, turns and units into ``summary``."""
    if store.exists():
        counts = store.manifest().counts
        summary.conversations = counts.get("conversations", 0)
        summary.turns = counts.get("turns", 0)
        summary.units = counts.get("units", 0)


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
