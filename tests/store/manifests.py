"""Editing a version's manifest in tests: change its JSON, then re-sign it as a writer would."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from convlab.store.format import StoreManifest, encode_manifest
from convlab.store.manifest import version_files


def resign(version: Path, change: Callable[[dict[str, Any]], None] | None = None) -> None:
    """Apply ``change`` to the manifest's JSON, renew its files' digests and its checksum."""
    path = version / "manifest.json"
    raw = json.loads(path.read_text())
    if change is not None:
        change(raw)
    manifest = msgspec.convert(raw, StoreManifest)
    manifest = msgspec.structs.replace(manifest, version_files=version_files(version))
    path.write_text(encode_manifest(manifest)[1])
