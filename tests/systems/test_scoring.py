"""What a system's scores are: its retrieval's, the hybrid fusion's or the system's fusion's."""

from __future__ import annotations

from convlab.retrieval import SearchOptions
from convlab.systems import resolve_system
from convlab.systems.search import system_scoring
from convlab.systems.system import System


def test_each_kind_of_system_names_its_scores() -> None:
    plain = SearchOptions()
    assert system_scoring(resolve_system("message"), plain) == "cosine"
    assert system_scoring(resolve_system("bm25:message"), SearchOptions.of(recency=True)) == (
        "bm25+recency"
    )
    assert system_scoring(resolve_system("hybrid:message"), plain) == "rrf"
    assert system_scoring(resolve_system("hybrid:message"), SearchOptions.of(fusion="combsum")) == (
        "combsum"
    )
    assert system_scoring(resolve_system("hybrid:message"), SearchOptions.of(mmr=0.7)) == "mmr"
    fused = System(name="f", views=("bm25:message", "message"), fusion="combmnz")
    assert system_scoring(fused, SearchOptions.of(recency=True)) == "combmnz"
