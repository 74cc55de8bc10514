"""The filters (:mod:`convlab.retrieval.filters`): the project filter, worked out by hand."""

from __future__ import annotations

import polars as pl
import pytest

from convlab.retrieval import Filters
from convlab.retrieval.filters import conversations_in_projects, filter_mask

CONVERSATIONS = pl.DataFrame(
    {
        "conversation_id": ["a", "a:agent-1", "b", "c", "d"],
        "project": ["/src/api", "/src/api", "/src/api/web", "/src/api-old", None],
    }
)
UNITS = pl.DataFrame(
    {
        "conversation_id": ["a", "b", "c", "d", "a:agent-1", "c"],
        "role": ["user"] * 6,
        "side": [None] * 6,
        "timestamp": [None] * 6,
    }
)


@pytest.mark.parametrize(
    ("projects", "ids"),
    [
        (("api",), ["a", "a:agent-1"]),  # a name: the last component only, not api-old
        (("/src/api",), ["a", "a:agent-1", "b"]),  # a path: it and what is under it
        (("/src/api/",), ["a", "a:agent-1", "b"]),
        (("/src/ap",), []),  # not a path prefix of a component
        (("web", "api-old"), ["b", "c"]),
        (("nothing",), []),
    ],
)
def test_conversations_in_projects(projects: tuple[str, ...], ids: list[str]) -> None:
    assert conversations_in_projects(CONVERSATIONS, projects) == ids


def test_filter_mask_keeps_the_units_of_the_projects() -> None:
    mask = filter_mask(UNITS, Filters(projects=("api",)), CONVERSATIONS)
    assert mask.tolist() == [True, False, False, False, True, False]


def test_the_project_filter_needs_the_conversations() -> None:
    with pytest.raises(ValueError, match="project filter needs the conversations frame"):
        filter_mask(UNITS, Filters(projects=("api",)))


def test_a_relative_path_or_tilde_is_resolved(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    app = tmp_path / "app"
    (app / "sub").mkdir(parents=True)
    convs = pl.DataFrame(
        {"conversation_id": ["x", "y", "z"], "project": [str(app), str(app / "sub"), "/other"]}
    )
    monkeypatch.chdir(app / "sub")
    assert conversations_in_projects(convs, (".",)) == ["y"]
    assert conversations_in_projects(convs, ("..",)) == ["x", "y"]
    monkeypatch.setenv("HOME", str(tmp_path))
    assert conversations_in_projects(convs, ("~/app",)) == ["x", "y"]
