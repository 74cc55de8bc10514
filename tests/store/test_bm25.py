"""BM25 saved and loaded with the store (issue 12): written in each version, checked like every
file of it, loaded by ``convlab search --hybrid`` instead of being rebuilt on every call.

On the code before (commit 27e5fc6) every test here failed: a store had no ``bm25/``, ``Store``
had no ``bm25()`` and ``--hybrid`` built BM25 from the units on every search.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK
from convlab.embed import HashEmbedder
from convlab.index.bm25 import BM25Index
from convlab.paths import sample_data_path
from convlab.store import Store, StoreConfig

CONFIG = StoreConfig(system="turn_pair")
QUERIES = ("postgres index concurrently", "docker layer cache npm", "sqlite database is locked")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of the bundled sample (20 conversations), hash embedder."""
    directory = tmp_path_factory.mktemp("bm25") / "store"
    Store(directory).update(
        [sample_data_path() / "transcripts"], config=CONFIG, embedder=HashEmbedder()
    )
    return directory


def _forbid_build(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(cls, units):  # type: ignore[no-untyped-def]
        raise AssertionError("BM25 was built, not loaded")

    monkeypatch.setattr(BM25Index, "build", classmethod(refuse))


def test_each_version_holds_bm25_covered_by_its_checksums(built: Path) -> None:
    store = Store(built)
    manifest = store.manifest()
    assert manifest.bm25 is True
    on_disk = sorted(p.name for p in (store.version / "bm25").iterdir())
    recorded = sorted(r.removeprefix("bm25/") for r in manifest.version_files if "bm25/" in r)
    assert recorded == on_disk
    assert len(on_disk) == 5  # bm25s: data, indices, indptr, params, vocab


def test_the_stored_bm25_scores_as_one_built_from_the_units(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    units = Store(built).frame("units")
    reference = BM25Index.build(units)
    _forbid_build(monkeypatch)
    loaded = Store(built).bm25()
    assert loaded is not None
    assert loaded.n == units.height == 222
    for q in QUERIES:
        assert np.array_equal(loaded.scores(q), reference.scores(q)), q
        assert loaded.scores(q).max() > 0, q


def test_hybrid_search_loads_bm25_instead_of_building_it(
    built: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["search", QUERIES[0], "--store", str(built), "--embedder", "hash", "--json", "-k", "3"]
    assert main([*argv, "--hybrid"]) == EXIT_OK
    expected = capsys.readouterr().out
    _forbid_build(monkeypatch)
    assert main([*argv, "--hybrid"]) == EXIT_OK
    out = capsys.readouterr().out
    assert out == expected
    assert json.loads(out.splitlines()[0])["conversation_id"] == "cc-pg-index"


def test_an_empty_store_has_no_bm25(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a transcript\n")
    store = Store(tmp_path / "store")
    summary = store.update([empty], config=CONFIG, embedder=HashEmbedder())
    assert summary.wrote_version
    assert store.manifest().bm25 is False
    assert store.bm25() is None
    assert not (store.version / "bm25").exists()
