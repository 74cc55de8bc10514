"""An index's manifest as a typed record, and the one place it is encoded and decoded.

:class:`IndexManifest` is what an index folder's ``manifest.json`` holds: what made the index
(model, embedder, strategy, content policy, corpus) and what it is (dimension, kind, the kind's
parameters, rows). :func:`write_manifest` writes it, :func:`read_manifest` reads it back; a
manifest that is not of this form (an unknown field, a missing one, a wrong type: an index
written by an older convlab), or not JSON, is refused with one line saying to run
``convlab index --rebuild``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from convlab.files import MANIFEST, read_text_regular

__all__ = ["IndexManifest", "read_manifest", "write_manifest"]

MANIFEST_FILE = "manifest.json"


class IndexManifest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An index's manifest (``manifest.json`` in its folder).

    Attributes:
        model_id: the embedding model (checked by :meth:`convlab.index.VectorIndex.load`).
        embedder: the embedder's registered name (:func:`convlab.embed.make_embedder`), if given.
        dimension: the vectors' dimension.
        kind: a name of :data:`convlab.index.kinds.INDEX_KINDS`.
        params: the kind's resolved parameters (search-time ones as last set).
        strategy: the strategy of the units, if given.
        policy: the content policy's fields, if given.
        corpus_fingerprint: the corpus the units came from, if given.
        convlab_version: the convlab that built the index.
        units: rows (units and vectors).
        created: when it was built (seconds since the epoch).
    """

    model_id: str
    embedder: str | None
    dimension: int
    kind: str
    params: dict[str, Any]
    strategy: str | None
    policy: dict[str, Any] | None
    corpus_fingerprint: str | None
    convlab_version: str
    units: int
    created: float


def write_manifest(manifest: IndexManifest, directory: Path) -> None:
    """Write ``manifest`` as ``directory/manifest.json`` (JSON, one key a line)."""
    text = msgspec.json.format(msgspec.json.encode(manifest), indent=1)
    (directory / MANIFEST_FILE).write_bytes(text)


def read_manifest(directory: Path) -> IndexManifest:
    """The manifest of the index in ``directory``.

    Raises:
        FileNotFoundError: no ``manifest.json`` there.
        ValueError: a manifest not of this form (an index written by an older convlab) or not
            JSON: run ``convlab index --rebuild``.
    """
    path = directory / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no convlab index at {directory} ({MANIFEST_FILE} missing)")
    text = read_text_regular(path, limit=MANIFEST)
    try:
        return msgspec.json.decode(text, type=IndexManifest)
    except msgspec.ValidationError as exc:
        raise ValueError(
            f"{directory}: an index written by an older convlab ({MANIFEST_FILE}: {exc}); "
            "run `convlab index --rebuild`"
        ) from None
    except msgspec.DecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc}); run `convlab index --rebuild`") from None
