"""``static:VIEW``: a dense view embedded by the static embedder, named, parsed, round-tripped."""

from __future__ import annotations

from pathlib import Path

import pytest

from convlab.retrieval import Retrieval
from convlab.systems import System, View, resolve_system
from convlab.systems.file import read_systems


def test_a_static_view_parses_and_keeps_its_name() -> None:
    view = View.parse("static:sequential")
    assert view == View("sequential", Retrieval.DENSE, None, "static")
    assert view.name == "static:sequential"
    assert view.index_key == "static:sequential"
    assert View.parse("dense:sequential").index_key == "sequential"
    assert View.parse(view.name) == view


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("static:bm25:message", "names a dense view"),
        ("static:hybrid:message", "names a dense view"),
        ("static:static:message", "names a dense view"),
        ("stat:message", "static"),  # the valid prefixes are listed
    ],
)
def test_static_names_a_dense_view_only(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        View.parse(text)


def test_a_system_of_static_views_round_trips_through_its_record() -> None:
    fused = System(
        name="f", views=("bm25:message", "static:sequential", "turn_pair"), weights=(1, 1, 0.5)
    )
    assert [v.embedder for v in fused.views] == [None, "static", None]
    assert System.from_dict(fused.as_dict()) == fused
    alone = resolve_system("static:sequential")
    assert alone.as_dict()["views"] == ["static:sequential"]
    assert System.from_dict(alone.as_dict()) == alone


def test_an_experiment_file_names_static_views(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text(
        '[[systems]]\nname = "static"\nviews = ["static:sequential"]\n\n'
        '[[systems]]\nname = "fused"\nviews = ["bm25:message", "static:turn_pair"]\n'
        "weights = [1.0, 0.5]\n"
    )
    one, two = read_systems(path)
    assert one.views == (View("sequential", embedder="static"),)
    assert two.views[1].name == "static:turn_pair"
