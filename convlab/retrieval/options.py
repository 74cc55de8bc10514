"""How to search: the retrieval mode and :class:`SearchOptions` (filters, fusion, rankers)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

import polars as pl

from convlab import schema
from convlab.fusion import FUSIONS, check_params, describe
from convlab.index.bm25 import BM25Params
from convlab.retrieval.prf import PRF
from convlab.retrieval.rocchio import Rocchio
from convlab.retrieval.second_round import SecondRound
from convlab.retrieval.sessions import SessionFirst
from convlab.retrieval.temporal import Temporal

__all__ = [
    "SCORINGS",
    "Retrieval",
    "SearchOptions",
    "conversations_in_projects",
    "scoring_meaning",
]

SCORINGS: dict[str, str] = {
    "cosine": "cosine similarity of the doc's best unit to the query",
    "bm25": "BM25 score of the doc's best unit",
    "mmr": "maximal marginal relevance: lambda * z-scored relevance - (1 - lambda) * redundancy",
    "rounds": "reciprocal rank fusion of the first round and its seeds' rounds, decayed",
}
"""What a hit's score is, by the name :attr:`SearchOptions.scoring` starts with, besides the
fusion methods (:func:`scoring_meaning`); a boost (``+recency``, ``+density``) multiplies it."""


def scoring_meaning(name: str) -> str:
    """What the scores named ``name`` are (a key of :data:`SCORINGS` or a fusion method).

    A fused score (hybrid search, a system of several views) is described by its method's
    module (:func:`convlab.fusion.describe`); an unknown name gets ``""``.

    Example:
        >>> scoring_meaning("bm25")
        "BM25 score of the doc's best unit"
        >>> scoring_meaning("combmnz")
        'CombMNZ: CombSUM times the number of runs that retrieved the doc'
    """
    if name in SCORINGS:
        return SCORINGS[name]
    return describe(name) if name in FUSIONS else ""


class Retrieval(StrEnum):
    """How the first candidates are found.

    ``dense``: cosine similarity of the unit vectors; ``lexical``: BM25 alone (scores are
    BM25's); ``hybrid``: two views of the strategy, dense and BM25, each rank docs, and the two
    doc rankings are fused by :mod:`convlab.fusion` (:attr:`SearchOptions.fusion`: reciprocal
    rank fusion by default; :func:`convlab.fusion.fuse_carrying`, as the views of a system are
    fused). ``bm25`` is accepted for ``lexical`` (the name reports give the lexical systems).

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
            (the dense and BM25 doc rankings fused by ``fusion``); a :class:`Retrieval` or its
            name.
        fusion: how hybrid search fuses its two doc rankings: a method of
            :data:`convlab.fusion.FUSIONS` (``rrf``: reciprocal rank fusion).
        fusion_params: the method's parameters (none: its defaults, ``k`` 60 for RRF as in
            Cormack et al.).
        recency: apply the recency boost; recency_days its horizon; recency_max its size.
        density: apply the session density boost; density_max its size.
        mmr: MMR lambda (None: off).
        hierarchical: conversation-first retrieval; top_conversations and conversation_floor
            set how many conversations and the similarity floor.
        depth: units each view fetches first (None: max(100, 10 k)); the search doubles it
            until the view has :attr:`pool` docs or its rows are exhausted.
        now: the reference time of the recency boost (None: the time of the search; give one
            to make an evaluation with recency reproducible).
        prf: RM3 pseudo-relevance feedback in the lexical (BM25) retrieval
            (:class:`convlab.retrieval.prf.PRF`, or its plain data); None: off.
        rocchio: Rocchio pseudo-relevance feedback in the dense retrieval
            (:class:`convlab.retrieval.rocchio.Rocchio`, or its plain data); None: off.
        bm25: BM25's k1 and b in the lexical retrieval
            (:class:`convlab.index.bm25.BM25Params`, or its plain data); None: the index's own
            (bm25s's defaults, k1 1.5 and b 0.75).
        session: session-first ranking of each view's docs, their scores mixed with their
            session's best (:class:`convlab.retrieval.sessions.SessionFirst`, or its plain
            data); None: off.
        temporal: boost the docs inside the times the query names
            (:class:`convlab.retrieval.temporal.Temporal`, or its plain data; the ``temporal``
            ranker); None: off.
        second_round: search again with the first round's best docs as queries and fuse the
            rounds (:class:`convlab.retrieval.second_round.SecondRound`, or its plain data);
            None: off.
        session_cap: at most this many docs of one session before the docs beyond it (the
            ``session_cap`` ranker); None: off.
    """

    k: int = 10
    conversations: tuple[str, ...] | None = None
    projects: tuple[str, ...] | None = None
    roles: tuple[str, ...] | None = None
    side: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    retrieval: Retrieval = Retrieval.DENSE
    fusion: str = "rrf"
    fusion_params: Mapping[str, Any] = field(default_factory=dict, hash=False)
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
    prf: PRF | None = None
    rocchio: Rocchio | None = None
    bm25: BM25Params | None = None
    session: SessionFirst | None = None
    temporal: Temporal | None = None
    second_round: SecondRound | None = None
    session_cap: int | None = None

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
        object.__setattr__(self, "fusion_params", dict(self.fusion_params))
        check_params(self.fusion, self.fusion_params)  # the errors name the valid choices
        if self.top_conversations < 1:
            raise ValueError("top_conversations must be at least 1")
        if self.depth is not None and self.depth < 1:
            raise ValueError("depth must be at least 1")
        if self.session_cap is not None and self.session_cap < 1:
            raise ValueError("session_cap must be at least 1")
        feedback = (
            ("prf", PRF),
            ("rocchio", Rocchio),
            ("bm25", BM25Params),
            ("session", SessionFirst),
            ("temporal", Temporal),
            ("second_round", SecondRound),
        )
        for name, config in feedback:
            value = getattr(self, name)
            if value is not None and not isinstance(value, config):
                object.__setattr__(self, name, _feedback(config, value, name))

    @property
    def fetch(self) -> int:
        """Units each view fetches first: ``depth``, else ``max(100, 10 k)``."""
        return self.depth or max(100, 10 * self.k)

    @property
    def pool(self) -> int:
        """Docs each view gathers before fusion and the doc rankers: ``k``, or a wider pool.

        MMR and session-first (which may raise a doc of a strong session) take ``max(5 k, 50)``.
        """
        wide = self.mmr is not None or self.session is not None
        return max(5 * self.k, 50) if wide else self.k

    @property
    def scoring(self) -> str:
        """What the hits' scores are (:func:`scoring_meaning` of its first part, then boosts).

        Example:
            >>> SearchOptions(retrieval="hybrid", recency=True).scoring
            'rrf+recency'
        """
        if self.mmr is not None:
            return "mmr"
        first = {Retrieval.DENSE: "cosine", Retrieval.LEXICAL: "bm25"}.get(
            self.retrieval, self.fusion
        )
        if self.second_round is not None and self.retrieval is not Retrieval.HYBRID:
            first = "rounds"
        boosted = ("session", "temporal", "recency", "density")
        boosts = [name for name in self.ranker_names if name in boosted]
        return "+".join([first, *boosts])

    @property
    def ranker_names(self) -> tuple[str, ...]:
        """The doc rankers these options switch on, by their :data:`RANKERS` names, in order.

        Each view's units are grouped per doc (``best_per_doc``) and, in hybrid search, the
        views' doc rankings fused; then session -> temporal -> recency -> density ->
        session_cap -> MMR run on the docs, and the cut to ``k`` follows them.

        Example:
            >>> SearchOptions(mmr=0.5, recency=True).ranker_names
            ('recency', 'mmr')
        """
        on = {
            "session": self.session is not None,
            "temporal": self.temporal is not None,
            "recency": self.recency,
            "density": self.density,
            "session_cap": self.session_cap is not None,
            "mmr": self.mmr is not None,
        }
        return tuple(name for name, wanted in on.items() if wanted)

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


def _feedback(config: Any, value: Mapping[str, Any], name: str) -> Any:
    """A nested config (PRF, Rocchio, BM25Params, SessionFirst, Temporal, ...) from plain data.

    Raises:
        ValueError: an unknown key (naming the valid ones) or a value out of its range.
    """
    fields = config.__dataclass_fields__
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise ValueError(f"{name}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(fields)}")
    return config(**value)
