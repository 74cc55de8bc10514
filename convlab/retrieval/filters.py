"""Which rows a search may return: :class:`Filters` (scope, projects, roles, side, time range).

The filters narrow the units before any retrieval (:func:`filter_mask`); a search's scope
(``conversations``) is kept apart, as the rows of each scope are gathered once for all its
queries (:class:`convlab.retrieval.search.Searcher`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Literal

import numpy as np
import polars as pl
from msgspec import Meta

from convlab import schema

__all__ = ["Filters", "conversations_in_projects", "filter_mask"]

_Id = Annotated[str, Meta(min_length=1, max_length=200)]
"""A conversation id in an experiment file (1 to 200 characters, as a system's name)."""
_Roles = Annotated[list[Literal["user", "assistant", "system", "tool"]], Meta(max_length=4)]


@dataclass(frozen=True, slots=True, kw_only=True)
class Filters:
    """Which units a search may return; None: no filter. Their flat keys are their names.

    Attributes:
        conversations: search only these conversations (None: the whole corpus).
        projects: search only conversations of these projects (the directory a session ran
            in): each a path, matching that directory and those under it, or a name, matching
            a directory's last component (:func:`conversations_in_projects`); no key of an
            experiment file.
        roles: only units whose target has one of these roles.
        side: only ``question`` or ``answer`` units (qa_pair).
        since: only units at or after this time; until: at or before.

    Raises:
        ValueError: a side that is not one of :data:`convlab.schema.SIDES`.
    """

    conversations: Annotated[tuple[_Id, ...], Meta(max_length=100_000)] | None = None
    projects: tuple[str, ...] | None = field(default=None, metadata={"in_file": False})
    roles: tuple[str, ...] | None = field(default=None, metadata={"file": _Roles})
    side: str | None = field(default=None, metadata={"file": Literal["question", "answer"]})
    since: datetime | None = None
    until: datetime | None = None

    def __post_init__(self) -> None:
        if self.side not in (None, *schema.SIDES):
            raise ValueError(f"side must be one of {schema.SIDES}")
        for name in ("conversations", "projects", "roles"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))


def conversations_in_projects(conversations: pl.DataFrame, projects: tuple[str, ...]) -> list[str]:
    """The ids of the conversations whose ``project`` is one of ``projects``.

    A value holding a path separator (or starting with ``~`` or ``.``) is a path: ``~`` is
    expanded and a relative path made absolute, and it matches that directory and every
    directory under it. Any other value is a name: it matches a directory whose last component
    it is. Sessions without a project never match.

    Args:
        conversations: the conversations frame (:data:`convlab.schema.CONVERSATIONS`).
        projects: paths or names.

    Example:
        >>> convs = pl.DataFrame({"conversation_id": ["a", "b", "c"],
        ...     "project": ["/home/ann/src/api", "/home/ann/src/api/web", "/srv/api-old"]})
        >>> conversations_in_projects(convs, ("api",))
        ['a']
        >>> conversations_in_projects(convs, ("/home/ann/src/api/",))
        ['a', 'b']
    """
    project = pl.col("project")
    name = project.str.extract(r"([^/\\]+)[/\\]*$")
    match = pl.lit(False)
    for value in projects:
        if value.startswith(("~", ".")) or "/" in value or os.sep in value:
            path = os.path.normpath(os.path.abspath(os.path.expanduser(value)))
            under = path if path.endswith(os.sep) else path + os.sep
            match = match | (project == path) | project.str.starts_with(under)
        else:
            match = match | (name == value)
    return conversations.filter(match.fill_null(False))["conversation_id"].to_list()


def filter_mask(
    units: pl.DataFrame, filters: Filters, conversations: pl.DataFrame | None = None
) -> np.ndarray:
    """Rows passing the project, role, side and time filters.

    Raises:
        ValueError: a project filter without the conversations frame that holds the projects.
    """
    mask = np.ones(units.height, dtype=bool)
    if filters.projects is not None:
        if conversations is None or "project" not in conversations.columns:
            raise ValueError(
                "the project filter needs the conversations frame with its project column "
                "(conversations_frame=...)"
            )
        ids = conversations_in_projects(conversations, filters.projects)
        mask &= units["conversation_id"].is_in(ids).to_numpy()
    if filters.roles is not None:
        mask &= units["role"].is_in(list(filters.roles)).fill_null(False).to_numpy()
    if filters.side is not None:
        mask &= (units["side"] == filters.side).fill_null(False).to_numpy()
    if filters.since is not None:
        mask &= (units["timestamp"] >= filters.since).fill_null(False).to_numpy()
    if filters.until is not None:
        mask &= (units["timestamp"] <= filters.until).fill_null(False).to_numpy()
    return mask
