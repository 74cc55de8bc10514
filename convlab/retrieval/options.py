"""How to search: the retrieval mode and :class:`SearchOptions` (filters and rankers)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

import polars as pl

from convlab import schema
from convlab.protocols import Ranker
from convlab.retrieval.rankers import RANKERS

__all__ = ["SCORE_KINDS", "Retrieval", "SearchOptions", "conversations_in_projects"]

SCORE_KINDS: dict[str, str] = {
    "cosine": "cosine similarity of the doc's best unit to the query",
    "bm25": "BM25 score of the doc's best unit",
    "rrf": "reciprocal rank fusion of the doc's dense and BM25 ranks, sum of 1/(rrf_k + rank)",
    "mmr": "maximal marginal relevance: lambda * z-scored relevance - (1 - lambda) * redundancy",
    "convex": "a system's views fused: the weighted sum of each view's normalised doc scores",
    "combsum": "a system's views fused: the sum of each view's normalised doc scores",
    "combmnz": "a system's views fused: CombSUM times the number of views that found the doc",
}
"""What a hit's score is, by the name :attr:`SearchOptions.score_kind` starts with; a boost
(``+recency``, ``+density``) multiplies it."""


class Retrieval(StrEnum):
    """How the first candidates are found.

    ``dense``: cosine similarity of the unit vectors; ``lexical``: BM25 alone (scores are
    BM25's); ``hybrid``: both views rank docs, and the two doc rankings are fused by reciprocal
    rank fusion (:mod:`convlab.fusion.rrf`). ``bm25`` is accepted for ``lexical`` (the name
    reports give the lexical systems).

    Example:
        >>> Retrieval("bm25"), Retrieval("hybrid").needs_bm25
        (<Retrieval.LEXICAL: 'lexical'>, True)
    """

    DENSE = "dense"
    LEXICAL = "lexical"
    HYBRID = "hybrid"

    @classmethod
    def _missing_(cls, value: object) -> Retrieval:
        if value == "bm25":
            return cls.LEXICAL
        valid = ", ".join(m.value for m in cls)
        raise ValueError(f"unknown retrieval {value!r}; valid: {valid} (or bm25)")

    @property
    def needs_bm25(self) -> bool:
        """Whether this mode searches a BM25 index."""
        return self is not Retrieval.DENSE

    @property
    def needs_vectors(self) -> bool:
        """Whether this mode searches the unit vectors."""
        return self is not Retrieval.LEXICAL

    @property
    def score_kind(self) -> str:
        """The score this mode gives a doc: ``cosine``, ``bm25`` or ``rrf``."""
        return {"dense": "cosine", "lexical": "bm25", "hybrid": "rrf"}[self.value]


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOptions:
    """How to search.

    Attributes:
        k: docs to return.
        conversations: search only these conversations (None: the whole corpus).
        projects: search only conversations of these projects (the directory a session ran
            in): each a path, matching that directory and those under it, or a name, matching
            a directory's last component (:func:`conversations_in_projects`).
        roles: only units whose target has one of these roles.
        side: only ``question`` or ``answer`` units (qa_pair).
        since: only units at or after this time; until: at or before.
        retrieval: ``dense``, ``lexical`` (BM25 alone, the lexical baseline) or ``hybrid``
            (the dense and BM25 doc rankings fused by reciprocal rank fusion); a
            :class:`Retrieval` or its name.
        rrf_k: the RRF constant (60 in Cormack et al.).
        recency: apply the recency boost; recency_days its horizon; recency_max its size.
        density: apply the session density boost; density_max its size.
        mmr: MMR lambda (None: off).
        hierarchical: conversation-first retrieval; top_conversations and conversation_floor
            set how many conversations and the similarity floor.
        depth: units each view fetches first (None: max(100, 10 k)); the search doubles it
            until the view has :attr:`pool` docs or its rows are exhausted.
        now: the reference time of the recency boost (None: the time of the search; give one
            to make an evaluation with recency reproducible).
    """

    k: int = 10
    conversations: tuple[str, ...] | None = None
    projects: tuple[str, ...] | None = None
    roles: tuple[str, ...] | None = None
    side: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    retrieval: Retrieval = Retrieval.DENSE
    rrf_k: int = 60
    recency: bool = False
    recency_days: float = 14.0
    recency_max: float = 0.20
    density: bool = False
    density_max: float = 0.15
    mmr: float | None = None
    hierarchical: bool = False
    top_conversations: int = 3
    conversation_floor: float = 0.2
    depth: int | None = None
    now: datetime | None = None

    def __post_init__(self) -> None:
        # a name is accepted for the mode (from configs, the CLI, JSON); stored as the Enum
        object.__setattr__(self, "retrieval", Retrieval(self.retrieval))
        if self.k < 1:
            raise ValueError("k must be at least 1")
        if self.side not in (None, *schema.SIDES):
            raise ValueError(f"side must be one of {schema.SIDES}")
        if self.mmr is not None and not 0.0 <= self.mmr <= 1.0:
            raise ValueError("mmr lambda must be in [0, 1]")
        if self.recency_days <= 0:
            raise ValueError("recency_days must be positive")
        if self.rrf_k < 0:
            raise ValueError("rrf_k must not be negative")
        if self.top_conversations < 1:
            raise ValueError("top_conversations must be at least 1")
        if self.depth is not None and self.depth < 1:
            raise ValueError("depth must be at least 1")

    @property
    def fetch(self) -> int:
        """Units each view fetches first: ``depth``, else ``max(100, 10 k)``."""
        return self.depth or max(100, 10 * self.k)

    @property
    def pool(self) -> int:
        """Docs each view gathers before fusion and the doc rankers: ``k``, or MMR's pool."""
        return max(5 * self.k, 50) if self.mmr is not None else self.k

    @property
    def score_kind(self) -> str:
        """What the hits' scores are (a key of :data:`SCORE_KINDS`, then the boosts).

        Example:
            >>> SearchOptions(retrieval="hybrid", recency=True).score_kind
            'rrf+recency'
        """
        if self.mmr is not None:
            return "mmr"
        boosts = [name for name, on in (("recency", self.recency), ("density", self.density)) if on]
        return "+".join([self.retrieval.score_kind, *boosts])

    def rankers(self) -> list[Ranker]:
        """The doc rankers these options switch on, from :data:`RANKERS`, in search's order.

        Each view's units are grouped per doc (``best_per_doc``) and, in hybrid search, the
        views' doc rankings fused; then recency -> density -> MMR run on the docs, and the
        cut to ``k`` follows them.
        """
        chosen: list[tuple[str, tuple[float, ...]]] = []
        if self.recency:
            chosen.append(("recency", (self.recency_days, self.recency_max)))
        if self.density:
            chosen.append(("density", (self.density_max,)))
        if self.mmr is not None:
            chosen.append(("mmr", (self.mmr,)))
        return [RANKERS.get(name)(*args) for name, args in chosen]

    def replace(self, **changes: Any) -> SearchOptions:
        """A copy with ``changes`` (validated like a new one)."""
        return SearchOptions(**{**self.as_dict(), **changes})

    def as_dict(self) -> dict[str, Any]:
        """The options as a plain dict (for run configs)."""
        return asdict(self)


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
