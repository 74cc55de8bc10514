"""A new fusion method is one file: registered, it is offered everywhere a fusion is chosen.

The method here is registered at test time (and removed after it): hybrid search, the search
options, ``convlab search --fusion``, a system and the search panel all take it, with no other
file changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pytest

from convlab.fusion import FUSIONS, describe
from convlab.fusion.base import Runs, aligned, ranked

NAME = "first-only"


def first_only(runs: Runs, weights: Sequence[float] | None = None) -> pl.DataFrame:
    """The first run's ranking alone: 1 / rank of its docs, the other runs' docs dropped."""
    wide, _ = aligned(runs, None, lambda: 1.0 / pl.col("rank").cast(pl.Float64))
    return ranked(wide.filter(pl.col("v0").is_not_null()), pl.col("v0"))


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> str:
    """``first-only`` in :data:`FUSIONS` for one test (what its own module would register)."""
    monkeypatch.setitem(FUSIONS._items, NAME, first_only)
    return NAME


def test_the_options_a_system_and_describe_take_it(registered: str) -> None:
    from convlab.retrieval import SearchOptions
    from convlab.systems.system import System

    assert SearchOptions.of(retrieval="hybrid", fusion=registered).scoring == registered
    fused = System(name="f", views=("bm25:message", "message"), fusion=registered)
    assert fused.fusion == registered
    # its module's docstring says what its scores are
    assert describe(registered) == (
        "A new fusion method is one file: registered, it is offered everywhere a fusion is chosen"
    )
    with pytest.raises(ValueError, match=f"fusion {registered} takes no parameter 'k'"):
        SearchOptions.of(fusion=registered, fusion_params={"k": 60})


def test_the_cli_and_the_panel_offer_it(registered: str) -> None:
    from convlab.app.cli.main import build_parser
    from convlab.app.cli.search import search_options
    from convlab.app.widgets import SearchPanel

    args = build_parser().parse_args(["search", "a query", "--hybrid", "--fusion", registered])
    assert search_options(args).retrieval.fusion == registered
    panel = SearchPanel(None)
    assert registered in panel.fusion.options
    assert set(panel.fusion.options) == set(FUSIONS.names())
    panel.fusion.value = registered
    assert panel.options().retrieval.fusion == registered


def test_hybrid_search_fuses_with_it(registered: str, tmp_path: Path) -> None:
    from convlab.build import build_index
    from convlab.embed import HashEmbedder
    from convlab.paths import sample_data_path
    from convlab.retrieval import SearchOptions, search

    embedder = HashEmbedder(64)
    built = build_index(
        sample_data_path() / "transcripts", "message", embedder=embedder, cache_dir=tmp_path
    )
    query = "postgres index concurrently without locking"
    dense = search(built, query, 5, embedder=embedder)
    hybrid = search(
        built,
        query,
        5,
        embedder=embedder,
        options=SearchOptions.of(retrieval="hybrid", fusion=registered),
    )
    # first-only keeps the first view's (dense) ranking: the same docs, scored 1/rank
    assert hybrid["doc_id"].to_list() == dense["doc_id"].to_list()
    assert hybrid["score"].to_list() == pytest.approx([1, 1 / 2, 1 / 3, 1 / 4, 1 / 5])
    rrf = search(built, query, 5, embedder=embedder, options=SearchOptions.of(retrieval="hybrid"))
    assert rrf["score"].to_list() != hybrid["score"].to_list()
