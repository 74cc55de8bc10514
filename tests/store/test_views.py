"""Stores of several strategies: the views of a system, built, updated and checked as one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from convlab.app.cli.main import main
from convlab.app.exits import EXIT_OK, EXIT_USAGE
from convlab.build import build_index
from convlab.embed import HashEmbedder
from convlab.retrieval import search
from convlab.store import Store, StoreConfig, StoreDamaged, StoreMismatch
from convlab.store.prune import prune, select
from convlab.systems import default_system, resolve_system
from tests.helpers import CountingHash, small_history


@pytest.fixture
def history(transcripts: Path, tmp_path: Path) -> Path:
    return small_history(transcripts, tmp_path)


def test_the_default_store_holds_every_view_of_the_default_system(
    history: Path, tmp_path: Path
) -> None:
    store = Store(tmp_path / "s")
    emb = CountingHash()
    store.update([history], config=StoreConfig(), embedder=emb)
    # dense views first (sequential, turn_pair), then message (BM25 only)
    assert store.strategies() == {"sequential": True, "turn_pair": True, "message": False}
    units = store.frame("units")
    for strategy in ("sequential", "turn_pair", "message"):
        mine = units.filter(pl.col("strategy") == strategy)
        bm25 = store.bm25(strategy)
        assert bm25 is not None
        assert bm25.n == mine.height > 0
    for strategy in ("sequential", "turn_pair"):
        ids = units.filter(pl.col("strategy") == strategy)["unit_id"].to_list()
        assert store.index(strategy).units["unit_id"].to_list() == ids
    with pytest.raises(ValueError, match="holds no embedded strategy 'message'"):
        store.index("message")
    # only the dense strategies' texts were embedded, each distinct text once
    dense = units.filter(pl.col("strategy").is_in(["sequential", "turn_pair"]))
    assert emb.texts == dense["text"].n_unique()
    assert (store.version / "views" / "turn_pair" / "index").is_dir()
    assert not (store.version / "views" / "message" / "index").exists()


def test_an_update_embeds_only_new_texts_and_keeps_every_view(
    history: Path, tmp_path: Path, transcripts: Path
) -> None:
    store = Store(tmp_path / "s")
    store.update([history], config=StoreConfig(), embedder=HashEmbedder())
    before = store.frame("units")
    emb = CountingHash()
    again = store.update([history], config=StoreConfig(), embedder=emb)
    assert (again.wrote_version, emb.texts) == (False, 0)
    extra = transcripts / "claude_code" / "spotter_real" / "subagent.jsonl"
    shutil.copy(extra, history / "-home-u-app" / "subagent.jsonl")
    store.update([history], config=StoreConfig(), embedder=emb)
    after = store.frame("units")
    new = after.join(before, on="unit_id", how="anti")
    assert new.height > 0
    assert set(new["strategy"]) == {"sequential", "turn_pair", "message"}
    assert emb.texts == new.filter(pl.col("strategy") != "message")["text"].n_unique()
    for strategy, embedded in store.strategies().items():
        ids = after.filter(pl.col("strategy") == strategy)["unit_id"].to_list()
        bm25 = store.bm25(strategy)
        assert bm25 is not None
        assert bm25.n == len(ids)
        if embedded:
            assert store.index(strategy).units["unit_id"].to_list() == ids
    (history / "-home-u-app" / "subagent.jsonl").unlink()
    store.update([history], config=StoreConfig(), embedder=emb)  # its history kept, detached
    assert store.frame("units").sort("unit_id").equals(after.sort("unit_id"))
    emb.texts = 0
    prune(store, select(store.manifest(), detached=True), embedder=emb)
    assert emb.texts == 0
    assert store.frame("units").sort("unit_id").equals(before.sort("unit_id"))


def test_another_system_of_the_same_views_needs_no_rebuild(history: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "s")
    store.update([history], config=StoreConfig(), embedder=HashEmbedder())
    version = store.version
    bm25_only = resolve_system("bm25:message")
    # other views: refused, naming what is held and what is needed
    with pytest.raises(StoreMismatch, match="it holds sequential, turn_pair, message"):
        store.update([history], config=StoreConfig(system="isolated"), embedder=HashEmbedder())
    heavier = default_system().as_dict() | {"weights": [1.0, 0.0, 0.0, 1.0, 1.0]}
    other = StoreConfig(system=type(bm25_only).from_dict(heavier))
    summary = store.update([history], config=other, embedder=HashEmbedder())
    assert not summary.wrote_version
    assert store.version == version  # the same files, the manifest names the new system
    assert store.system().weights == (1.0, 0.0, 0.0, 1.0, 1.0)


def test_a_damaged_view_index_is_found(history: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "s")
    store.update([history], config=StoreConfig(), embedder=HashEmbedder())
    path = store.version / "views" / "turn_pair" / "index" / "vectors.npy"
    vectors = np.load(path)
    vectors[3] *= 2.0  # same size, not unit length: only the norm check sees it
    np.save(path, vectors)
    with pytest.raises(StoreDamaged, match=r"views/turn_pair/index/vectors\.npy"):
        Store(store.directory).search("a query")


def test_search_takes_what_build_index_built(tmp_path: Path) -> None:
    from convlab.paths import sample_data_path

    emb = HashEmbedder()
    built = build_index(
        sample_data_path() / "transcripts", "turn_pair", embedder=emb, cache_dir=tmp_path
    )
    hits = search(built, "postgres index concurrently", embedder=emb, k=3)
    assert hits.equals(search(built.index, "postgres index concurrently", embedder=emb, k=3))
    lexical = search(built, "concurrently", embedder=emb, k=3, options=_lexical())
    assert lexical.height > 0  # its BM25 came with it


def _lexical():  # type: ignore[no-untyped-def]
    from convlab.retrieval import SearchOptions

    return SearchOptions.of(retrieval="lexical")


def test_cli_search_names_views_the_store_lacks(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "s"
    base = ["--store", str(out), "--embedder", "hash", "-q"]
    assert main(["index", str(history), *base]) == EXIT_OK
    assert main(["search", "flock", *base, "--system", "whole_turn"]) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert err.startswith("convlab search: ")
    assert "holds no view whole_turn" in err
    assert "sequential, turn_pair, message (BM25 only)" in err
    assert (
        main(["search", "phoenix server", *base, "--system", "bm25:message", "--json"]) == EXIT_OK
    )
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert rows
    assert all(str(r["unit_id"]).startswith("message:") for r in rows)


def test_resolve_system_errors_name_the_choices(tmp_path: Path) -> None:
    two = tmp_path / "two.toml"
    two.write_text(
        '[[systems]]\nname = "a"\nstrategy = "message"\n\n'
        '[[systems]]\nname = "b"\nstrategy = "turn_pair"\nretrieval = "lexical"\n'
    )
    with pytest.raises(ValueError, match=r"holds 2 systems \(a, b\): name one as .*#NAME"):
        resolve_system(str(two))
    assert resolve_system(f"{two}#b").views[0].name == "bm25:turn_pair"
    with pytest.raises(ValueError, match="has no system 'c'; it has a, b"):
        resolve_system(f"{two}#c")
    with pytest.raises(ValueError, match="not a view of a strategy"):
        resolve_system("bm25:nope")
    with pytest.raises(ValueError, match="prefix 'fusion' is not one of"):
        resolve_system("fusion:nope")
