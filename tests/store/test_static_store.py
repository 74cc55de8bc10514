"""A store of ``static:VIEW`` holds the static embedder's vectors; one embedder per store."""

from __future__ import annotations

import pytest

from convlab.store import StoreConfig
from convlab.systems import System


def test_a_static_view_names_the_stores_embedder() -> None:
    config = StoreConfig(system="static:sequential")
    assert config.view_embedder == "static"
    assert config.dense == ("sequential",)
    assert config.strategies == ("sequential",)
    assert StoreConfig(system="sequential").view_embedder is None
    fused = System(name="f", views=("bm25:message", "static:turn_pair"), weights=(1, 0.5))
    assert StoreConfig(system=fused).view_embedder == "static"


def test_a_store_refuses_dense_views_of_two_embedders() -> None:
    mixed = System(name="m", views=("sequential", "static:turn_pair"), weights=(1, 1))
    with pytest.raises(ValueError, match="one embedder's vectors"):
        StoreConfig(system=mixed)
