"""A version's manifest as a typed record, and the one place it is encoded and decoded.

:class:`StoreManifest` is what ``v<N>/manifest.json`` holds (format :data:`STORE_FORMAT`): the
model, the settings that must match for an update to build on the version
(:class:`StoreSettings`), the system it is searched with, the transcript files seen
(:class:`FileRecord`), the conversations' fingerprints, counts, provenance, and the size and
digest of every file of the version (:class:`VersionFile`) with a checksum of the whole.
:func:`encode_manifest` writes it (its checksum renewed), :func:`decode_manifest` reads it back:
a manifest of an older format is refused with one line saying to rebuild
(:class:`convlab.store.errors.StoreOutdated`), one that is not a manifest of this format, or does
not match its checksum, is damaged.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import msgspec

from convlab.store.errors import StoreOutdated, damaged

__all__ = [
    "STORE_FORMAT",
    "Detached",
    "FileRecord",
    "StoreManifest",
    "StoreSettings",
    "VersionFile",
    "decode_manifest",
    "encode_manifest",
    "manifest_checksum",
]

STORE_FORMAT = 4
"""The format of the versions this code writes and reads (3: typed manifest, ``chunks`` frame;
4: each version records the store's id, its own name and the store's other versions, and the
conversations kept after their transcripts changed or went: ``detached``).

A version of an older format is refused (``convlab index --rebuild`` writes a new one)."""


class StoreSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What must match for an update to build on a version (its manifest's ``config``).

    The system's fusion and weights are not in it: a store holding the same views is searched
    with another system without a rebuild.

    Attributes:
        strategies: the strategies held, in order (the first's index is ``index/``).
        dense: those whose units are embedded.
        max_tokens: the units' token limit (:attr:`convlab.specs.UnitSpec.max_tokens`).
        policy: the content policy's fields that differ from the default.
        index_kind: :attr:`convlab.specs.IndexSpec.kind`.
        index_params: :attr:`convlab.specs.IndexSpec.params`.
        redact: the redaction mode.
    """

    strategies: list[str]
    dense: list[str]
    max_tokens: int
    policy: dict[str, Any]
    index_kind: str
    index_params: dict[str, Any]
    redact: str


class FileRecord(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A transcript file seen by an update: how to tell it changed, and what it held.

    Attributes:
        size: bytes.
        mtime_ns: modification time.
        sha256: the content's SHA-256 (hex).
        conversations: the conversations read from it, sorted.
        skipped: how many of its records were skipped.
    """

    size: int
    mtime_ns: int
    sha256: str
    conversations: list[str] = msgspec.field(default_factory=list)
    skipped: int = 0


class Detached(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A conversation kept although its transcript no longer holds it as stored.

    Attributes:
        source: the transcript it was read from.
        reason: ``gone`` (the file vanished, or is no longer a regular file), ``shrank`` (the
            file now holds fewer of its messages: truncated) or ``rewritten`` (this is an earlier
            version of ``of``, whose transcript was rewritten).
        since: when it was detached (seconds since the epoch).
        of: the conversation this is an earlier version of (``rewritten`` only).
    """

    source: str
    reason: str
    since: float
    of: str | None = None


class VersionFile(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Size and digest of a file of the version (``blocks``: its 1 MiB blocks' digests).

    See :mod:`convlab.store.manifest` for the digest and when the blocks are kept.
    """

    size: int
    sha256: str
    blocks: list[str] | None = None


class StoreManifest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A version's manifest (``v<N>/manifest.json``).

    Attributes:
        format: :data:`STORE_FORMAT`.
        store_id: the id of the store's marker (:mod:`convlab.store.marker`): a version is only
            ever removed by the store whose marker holds it.
        version: the version's own folder name (``v<N>``).
        previous: the store's other versions on disk when it was written, each recording the
            same ``store_id``: the only versions an update may remove.
        convlab_version: the convlab that wrote it.
        model_id: the model of the vectors (an update with another model is refused).
        embedder: the registered name of the embedder (queries are embedded with it).
        dimension: the vectors' dimension.
        device: where the vectors were made (provenance: they do not depend on it).
        engine: the embedding engine's description.
        config: the settings an update must match (:class:`StoreSettings`).
        system: the system the store is searched with by default (``System.as_dict()``).
        redact_rules: the version of the redaction rules (changed rules: every file read again).
        roots: every path indexed into the store.
        files: per transcript file, :class:`FileRecord`.
        fingerprints: per conversation, the content hash its rows were built from.
        detached: per conversation kept although its transcript changed or went,
            :class:`Detached` (``convlab prune`` removes them).
        counts: rows per stored frame.
        bm25: whether the first strategy has a BM25 index (False: no unit to index).
        updated_at: when it was written (seconds since the epoch).
        unit_costs: each strategy's units and embedding cost (``convlab stats``).
        embedding: the update's embedding pass: its seconds and cache counts.
        version_files: size and digest of every file of the version but this one.
        checksum: the SHA-256 of the rest (:func:`manifest_checksum`).
    """

    format: int = STORE_FORMAT
    store_id: str
    version: str
    previous: list[str] = msgspec.field(default_factory=list)
    convlab_version: str
    model_id: str
    embedder: str
    dimension: int
    device: str
    engine: dict[str, Any]
    config: StoreSettings
    system: dict[str, Any]
    redact_rules: str
    roots: list[str]
    files: dict[str, FileRecord]
    fingerprints: dict[str, str]
    detached: dict[str, Detached] = msgspec.field(default_factory=dict)
    counts: dict[str, int]
    bm25: bool
    updated_at: float
    unit_costs: list[dict[str, Any]]
    embedding: dict[str, Any]
    version_files: dict[str, VersionFile] = msgspec.field(default_factory=dict)
    checksum: str = ""


def manifest_checksum(manifest: StoreManifest) -> str:
    """The SHA-256 of a manifest's canonical JSON (sorted keys), its ``checksum`` left out."""
    body = msgspec.to_builtins(msgspec.structs.replace(manifest, checksum=""))
    body.pop("checksum", None)
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def encode_manifest(manifest: StoreManifest) -> tuple[StoreManifest, str]:
    """The manifest with its checksum renewed, and its JSON (sorted keys, indented).

    The text layer is the standard library's JSON: it writes a file name that is not UTF-8 (a
    lone surrogate) as an escape and reads it back, which msgspec's JSON refuses.
    """
    sealed = msgspec.structs.replace(manifest, checksum=manifest_checksum(manifest))
    return sealed, json.dumps(msgspec.to_builtins(sealed), indent=1, sort_keys=True)


def decode_manifest(store: Path, path: Path, data: bytes | str) -> StoreManifest:
    """The manifest in ``data`` (read from ``path`` of the store in ``store``), checked.

    Raises:
        StoreOutdated: a manifest of a format older than :data:`STORE_FORMAT` (one line saying
            to run ``convlab index --rebuild``).
        StoreDamaged: not JSON, not a manifest of this format, or not matching its checksum.
    """
    try:
        raw = json.loads(data)
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError included
        raise damaged(store, path, f"unreadable ({type(exc).__name__})", rebuild=True) from exc
    if not isinstance(raw, dict):
        raise damaged(store, path, "not a JSON object", rebuild=True)
    fmt = raw.get("format", 1 if "model_id" in raw else None)  # format 1 wrote none
    if fmt is None:
        raise damaged(store, path, "not a convlab manifest (no format)", rebuild=True)
    if isinstance(fmt, int) and not isinstance(fmt, bool) and fmt < STORE_FORMAT:
        raise StoreOutdated(
            f"{path}: a store of format {fmt}, older than this convlab's ({STORE_FORMAT}); "
            f"run `convlab index PATH --store {store} --rebuild` to rebuild it"
        )
    if fmt != STORE_FORMAT:
        raise damaged(store, path, f"not a convlab manifest (format {fmt!r})", rebuild=True)
    try:
        manifest = msgspec.convert(raw, StoreManifest, strict=True)
    except msgspec.ValidationError as exc:
        raise damaged(store, path, f"not a convlab manifest ({exc})", rebuild=True) from None
    if manifest.checksum != manifest_checksum(manifest):
        raise damaged(
            store, path, "does not match its checksum (edited or corrupted)", rebuild=True
        )
    return manifest
