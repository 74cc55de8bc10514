"""One store format (issue 24): a typed manifest, ``chunks`` at the store boundary, older
formats refused with one line saying to rebuild.

On the code before (commit cfe53aa) these failed: a store of format 2 opened, searched and
updated (no refusal); the store's frame was ``sentences`` (no ``chunks``); the manifest was a
plain dict (no :class:`StoreManifest`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK, EXIT_USAGE
from convlab.paths import sample_data_path
from tests.helpers import index_argv

SOURCE = sample_data_path() / "transcripts"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of the bundled sample (hash embedder, one view)."""
    store = tmp_path_factory.mktemp("format") / "store"
    assert main(index_argv(SOURCE, store)) == EXIT_OK
    return store


def _as_format_2(store: Path) -> Path:
    """Mark the live version as written in format 2, re-signed as format 2 signed manifests."""
    path = store / "current" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["format"] = 2
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    manifest["checksum"] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return (store / "current").resolve() / "manifest.json"


def test_a_store_of_an_older_format_is_refused_with_one_line_until_rebuilt(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    store = tmp_path / "old"
    shutil.copytree(built, store, symlinks=True)
    manifest = _as_format_2(store)
    said = (
        f"{manifest}: a store of format 2, older than this convlab's (4); "
        f"run `convlab index PATH --store {store} --rebuild` to rebuild it"
    )
    capsys.readouterr()
    commands = {
        "search": ["search", "postgres index", "--store", str(store), "--embedder", "hash"],
        "stats": ["stats", "--store", str(store)],
        "index": index_argv(SOURCE, store),
    }
    for name, argv in commands.items():
        assert main(argv) == EXIT_USAGE, name
        err = capsys.readouterr().err
        assert err == f"convlab {name}: {said}\n", name
    assert main([*index_argv(SOURCE, store), "--rebuild"]) == EXIT_OK
    capsys.readouterr()
    rebuilt = json.loads((store / "current" / "manifest.json").read_text())
    assert rebuilt["format"] == 4
    assert main(commands["search"]) == EXIT_OK
    assert capsys.readouterr().out
    old_versions = [p for p in store.iterdir() if p.name.startswith("v")]
    # the version of format 2 records no store id: it is kept, never removed unchecked
    assert manifest.parent in old_versions
    assert len(old_versions) == 2


def test_the_store_keeps_chunks_by_that_name(built: Path) -> None:
    from convlab.store import Store

    store = Store(built)
    assert (store.version / "chunks.parquet").is_file()
    assert not (store.version / "sentences.parquet").exists()
    chunks = store.frame("chunks")
    assert chunks.height == store.manifest().counts["chunks"] > 0
    with pytest.raises(ValueError, match="unknown frame 'sentences'"):
        store.frame("sentences")


def test_the_manifest_is_typed_and_written_in_one_place(built: Path, tmp_path: Path) -> None:
    from convlab.store import Store, StoreDamaged, StoreManifest
    from convlab.store.format import decode_manifest, encode_manifest

    manifest = Store(built).manifest()
    assert isinstance(manifest, StoreManifest)
    assert manifest.config.strategies == ["turn_pair"] == manifest.config.dense
    assert (manifest.config.index_kind, manifest.config.max_tokens) == ("flat", 256)
    sealed, text = encode_manifest(manifest)
    assert decode_manifest(tmp_path, tmp_path / "m.json", text) == sealed
    raw = json.loads(text)
    raw["surplus"] = 1  # an unknown field: not a manifest of this format
    with pytest.raises(StoreDamaged, match=r"not a convlab manifest \(Object contains unknown"):
        decode_manifest(tmp_path, tmp_path / "m.json", json.dumps(raw))
