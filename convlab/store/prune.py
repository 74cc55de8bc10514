"""Removing history the user names: ``convlab prune``.

An update never removes a conversation (:mod:`convlab.store.history`); :func:`prune` does, only
the conversations it is given (:func:`select`: every detached one, those detached for a reason,
or ids), writing a new version without their rows through the same writer as an update, with
the store's own settings (:func:`config_of`) and its embedding cache (nothing is embedded).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

import msgspec
import polars as pl

from convlab.store.config import IndexSummary, StoreConfig
from convlab.store.errors import StoreLocked, StoreMismatch
from convlab.store.format import StoreManifest
from convlab.store.history import DIGEST, Changes
from convlab.store.scan import Scan
from convlab.store.update import Plan, load_empty, write_plan

if TYPE_CHECKING:
    from convlab.protocols import Embedder
    from convlab.store.store import Store

__all__ = ["REASONS", "config_of", "prune", "select"]

REASONS = ("gone", "shrank", "rewritten")
"""Why a conversation is detached (:class:`convlab.store.format.Detached`)."""


def select(
    manifest: StoreManifest,
    *,
    detached: bool = False,
    reasons: Iterable[str] = (),
    conversations: Iterable[str] = (),
) -> list[str]:
    """The stored conversations to remove, sorted.

    Args:
        manifest: the store's manifest.
        detached: every detached conversation.
        reasons: the detached conversations detached for one of these (``gone``, ...).
        conversations: conversation ids, each one the store holds.

    Raises:
        ValueError: an id the store does not hold, or a reason not in :data:`REASONS`.
    """
    wanted = set(reasons)
    if unknown := sorted(wanted - set(REASONS)):
        raise ValueError(f"unknown reason {unknown[0]!r}; valid: {', '.join(REASONS)}")
    out = {c for c, d in manifest.detached.items() if detached or d.reason in wanted}
    for c in conversations:
        if c not in manifest.fingerprints:
            raise ValueError(f"no conversation {c!r} in the store (`convlab search` finds ids)")
        out.add(c)
    return sorted(out)


def config_of(manifest: StoreManifest) -> StoreConfig:
    """The settings a store was built with, as a :class:`StoreConfig`.

    Raises:
        StoreMismatch: settings this convlab cannot make again (run ``convlab index``).
    """
    from convlab.pipeline.policy import ContentPolicy
    from convlab.specs import IndexSpec
    from convlab.systems.system import System

    s = manifest.config
    try:
        config = StoreConfig(
            system=System.from_dict(manifest.system),
            max_tokens=s.max_tokens,
            policy=ContentPolicy(**s.policy),
            index=IndexSpec(s.index_kind, s.index_params),
            redact=s.redact,
        )
    except (TypeError, ValueError) as exc:
        raise StoreMismatch(f"the store's settings cannot be read back ({exc})") from None
    if config.settings() != s:
        raise StoreMismatch("the store's settings cannot be made again; run `convlab index`")
    return config


def prune(
    store: Store, conversations: Collection[str], *, embedder: Embedder, wait: bool = False
) -> IndexSummary:
    """Remove ``conversations`` from ``store``: a new version without their rows.

    Nothing is embedded (the kept units keep their vectors). The store's lock is held
    throughout, as an update holds it.

    Raises:
        StoreLocked: another indexer holds the lock and ``wait`` is False.
        StoreMismatch: settings this convlab cannot make again.
    """
    from filelock import Timeout

    from convlab.engines import get_engine

    lock = store.lock(wait=wait)
    try:
        lock.acquire()
    except Timeout:
        raise StoreLocked(
            f"another `convlab index` is writing {store.directory}; wait for it or pass --wait"
        ) from None
    try:
        store.refresh()
        manifest = store.manifest()
        gone = set(conversations) & set(manifest.fingerprints)
        summary = IndexSummary(conversations_removed=len(gone))
        if not gone:
            return summary
        files = {
            path: msgspec.structs.replace(
                rec, conversations=[c for c in rec.conversations if c not in gone]
            )
            for path, rec in manifest.files.items()
        }
        changes = Changes(
            drop=gone, detached={c: d for c, d in manifest.detached.items() if c not in gone}
        )
        prints = {c: fp for c, fp in manifest.fingerprints.items() if c not in gone}
        digests = pl.DataFrame(
            schema={"conversation_id": pl.String, "message_index": pl.Int32, DIGEST: pl.String}
        )
        plan = Plan(manifest, [], Scan(files=files), load_empty(), digests, changes, prints)
        engine = get_engine("local")
        try:
            write_plan(store, plan, config_of(manifest), embedder, engine, summary)
        finally:
            engine.close()
        return summary
    finally:
        lock.release()
