"""How to search: :class:`SearchOptions`, of filters, retrieval options and doc rankers.

The options are three parts and two numbers: :class:`~convlab.retrieval.filters.Filters`
(which units), :class:`RetrievalOptions` (how each view finds its candidates: the mode, the
fusion of hybrid search, the depth, conversation-first selection, BM25's parameters, RM3,
Rocchio, the second round) and the doc rankers (:mod:`convlab.retrieval.rankers`, each its
own config), with ``k`` and ``now``. Each nested config is a typed frozen dataclass whose
fields declare their bounds (:mod:`convlab.config`).

The flat form (:meth:`SearchOptions.from_dict`, :meth:`SearchOptions.as_dict`) is what an
experiment file's ``options`` table, a run's ``config.json`` and the CLI hold: one key per
scalar, each config under its ``KEY`` in its ``FORM`` (``mmr = 0.7``, ``prf = {fb_docs = 3}``,
``recency = true, recency_days = 7``). Its keys are listed by :func:`flat_schema`, which the
experiment file's schema is generated from.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from msgspec import Meta

from convlab import defaults
from convlab.config import check, fields, flat, from_flat, is_config
from convlab.fusion import FUSIONS, check_params, describe
from convlab.index.bm25 import BM25Params
from convlab.protocols import Ranker
from convlab.retrieval.filters import Filters
from convlab.retrieval.prf import PRF
from convlab.retrieval.rankers import ConversationFirst, RegisteredRanker, configs
from convlab.retrieval.rocchio import Rocchio
from convlab.retrieval.second_round import SecondRound

__all__ = [
    "SCORINGS",
    "Retrieval",
    "RetrievalOptions",
    "SearchOptions",
    "doc_rankers",
    "flat_schema",
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
    doc rankings are fused by :mod:`convlab.fusion` (:attr:`RetrievalOptions.fusion`: reciprocal
    rank fusion by default; :func:`convlab.fusion.fuse_carrying`, as the views of a system are
    fused; :attr:`RetrievalOptions.mode`). ``bm25`` is accepted for ``lexical`` (the name
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


_Short = Annotated[str, Meta(min_length=1, max_length=100)]
_Param = Annotated[int, Meta(ge=0, le=1_000_000)] | Annotated[float, Meta(ge=0.0, le=1e6)] | _Short
_Modes = Literal["dense", "lexical", "bm25", "hybrid"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrievalOptions:
    """How each view finds its candidate docs, before the doc rankers.

    Attributes:
        mode: ``dense``, ``lexical`` (BM25 alone, the lexical baseline) or ``hybrid`` (the
            dense and BM25 doc rankings fused by ``fusion``); a :class:`Retrieval` or its name
            (flat key ``retrieval``).
        fusion: how hybrid search fuses its two doc rankings: a method of
            :data:`convlab.fusion.FUSIONS` (``rrf``: reciprocal rank fusion).
        fusion_params: the method's parameters (none: its defaults, ``k`` 60 for RRF as in
            Cormack et al.).
        depth: units each view fetches first (None: max(100, 10 k)); the search doubles it
            until the view has :attr:`SearchOptions.pool` docs or its rows are exhausted.
        hierarchical: conversation-first retrieval
            (:class:`convlab.retrieval.rankers.hierarchical.ConversationFirst`); None: off.
        bm25: BM25's k1 and b in the lexical retrieval (:class:`convlab.index.bm25.BM25Params`);
            None: the index's own (bm25s's defaults, k1 1.5 and b 0.75).
        prf: RM3 pseudo-relevance feedback in the lexical (BM25) retrieval
            (:class:`convlab.retrieval.prf.PRF`); None: off.
        rocchio: Rocchio pseudo-relevance feedback in the dense retrieval
            (:class:`convlab.retrieval.rocchio.Rocchio`); None: off.
        second_round: search again with the first round's best docs as queries and fuse the
            rounds (:class:`convlab.retrieval.second_round.SecondRound`); None: off.

    Raises:
        ValueError: an unknown mode or fusion method, a parameter the method does not take, a
            depth below 1.
    """

    mode: Retrieval = field(default=Retrieval.DENSE, metadata={"flat": "retrieval", "file": _Modes})
    fusion: Annotated[str, Meta(min_length=1, max_length=100)] = "rrf"
    fusion_params: Mapping[str, Any] = field(
        default_factory=dict, hash=False, metadata={"file": dict[_Short, _Param]}
    )
    depth: Annotated[int, Meta(ge=1, le=10_000)] | None = None
    hierarchical: ConversationFirst | None = None
    bm25: BM25Params | None = None
    prf: PRF | None = None
    rocchio: Rocchio | None = None
    second_round: SecondRound | None = None

    def __post_init__(self) -> None:
        # a name is accepted for the mode (from configs, the CLI, JSON); stored as the Enum
        object.__setattr__(self, "mode", Retrieval(self.mode))
        object.__setattr__(self, "fusion_params", dict(self.fusion_params))
        check_params(self.fusion, self.fusion_params)  # the errors name the valid choices
        check(self, "retrieval")


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOptions:
    """How to search: filters, retrieval options and doc rankers (see the module).

    Attributes:
        k: docs to return.
        filters: which units may be returned (:class:`convlab.retrieval.filters.Filters`).
        retrieval: how each view finds its candidates (:class:`RetrievalOptions`).
        rankers: the doc rankers, each its own config (:data:`convlab.retrieval.rankers.RANKERS`:
            ``session``, ``temporal``, ``recency``, ``density``, ``session_cap``, ``mmr``); kept
            in the order they run, by their ``STAGE``, at most one of each.
        now: the reference time of the recency boost (None: the time of the search; give one
            to make an evaluation with recency reproducible).

    Raises:
        ValueError: a ``k`` outside [1, 10,000], a ranker that is not a registered one, or
            one given twice.

    Example:
        >>> from convlab.retrieval.rankers import MMR, Recency
        >>> options = SearchOptions(rankers=(MMR(0.5), Recency()))
        >>> options.ranker_names, options == SearchOptions.of(mmr=0.5, recency=True)
        (('recency', 'mmr'), True)
    """

    k: Annotated[int, Meta(ge=1, le=10_000)] = defaults.K
    filters: Filters = field(default_factory=Filters)
    retrieval: RetrievalOptions = field(default_factory=RetrievalOptions)
    rankers: tuple[RegisteredRanker, ...] = ()
    now: datetime | None = None

    def __post_init__(self) -> None:
        check(self, "options")
        known = {c.KEY: c for c in configs()}
        rankers = tuple(self.rankers)
        for ranker in rankers:
            key = getattr(type(ranker), "KEY", None)
            if known.get(key) is not type(ranker):  # type: ignore[arg-type]
                raise ValueError(
                    f"{ranker!r} is not a doc ranker of the options; valid: {', '.join(known)}"
                )
        keys = [type(r).KEY for r in rankers]
        if len(set(keys)) != len(keys):
            raise ValueError(f"a ranker is given twice: {', '.join(keys)}")
        object.__setattr__(self, "rankers", tuple(sorted(rankers, key=lambda r: r.STAGE)))

    @classmethod
    def from_dict(cls, options: Mapping[str, Any]) -> SearchOptions:
        """The options of the flat form ``options`` (:meth:`as_dict`'s, an experiment file's).

        A config may be given as itself or as its plain data (``prf = {"fb_docs": 5}``).

        Raises:
            ValueError: an unknown key (naming the valid ones) or an invalid value.
        """
        keys = [key for key, _, _ in flat_schema()]
        unknown = sorted(set(options) - set(keys))
        if unknown:
            raise ValueError(
                f"unknown search option(s) {', '.join(unknown)}; valid: {', '.join(keys)}"
            )
        rankers = (from_flat(c, options) for c in configs())
        return cls(
            **{k: options[k] for k in ("k", "now") if k in options},
            filters=_part(Filters, options),
            retrieval=_part(RetrievalOptions, options),
            rankers=tuple(r for r in rankers if r is not None),
        )

    @classmethod
    def of(cls, **options: Any) -> SearchOptions:
        """:meth:`from_dict` of keyword arguments: ``SearchOptions.of(retrieval="hybrid")``."""
        return cls.from_dict(options)

    def as_dict(self) -> dict[str, Any]:
        """The options in their flat form (every key of :func:`flat_schema`; for run configs)."""
        out: dict[str, Any] = {"k": self.k}
        out |= _flat_part(self.filters)
        out |= _flat_part(self.retrieval)
        on = {type(r).KEY: r for r in self.rankers}
        for config in configs():
            out |= flat(on.get(config.KEY), config)
        out["now"] = self.now
        return out

    def replace(self, **changes: Any) -> SearchOptions:
        """A copy with ``changes`` to keys of the flat form (validated like a new one)."""
        return SearchOptions.from_dict({**self.as_dict(), **changes})

    def ranker(self, key: str) -> RegisteredRanker | None:
        """The doc ranker of ``key`` (``"mmr"``, ...) these options hold (None: off)."""
        return next((r for r in self.rankers if key == type(r).KEY), None)

    @property
    def fetch(self) -> int:
        """Units each view fetches first: ``depth``, else ``max(100, 10 k)``."""
        return self.retrieval.depth or max(100, 10 * self.k)

    @property
    def pool(self) -> int:
        """Docs each view gathers before fusion and the doc rankers: ``k``, or a wider pool.

        MMR and session-first (which may raise a doc of a strong session) take ``max(5 k, 50)``.
        """
        wide = {"mmr", "session"} & set(self.ranker_names)
        return max(5 * self.k, 50) if wide else self.k

    @property
    def scoring(self) -> str:
        """What the hits' scores are (:func:`scoring_meaning` of its first part, then boosts).

        Example:
            >>> SearchOptions.of(retrieval="hybrid", recency=True).scoring
            'rrf+recency'
        """
        names = self.ranker_names
        if "mmr" in names:
            return "mmr"
        mode = self.retrieval.mode
        first = {Retrieval.DENSE: "cosine", Retrieval.LEXICAL: "bm25"}.get(
            mode, self.retrieval.fusion
        )
        if self.retrieval.second_round is not None and mode is not Retrieval.HYBRID:
            first = "rounds"
        boosted = ("session", "temporal", "recency", "density")
        return "+".join([first, *(name for name in names if name in boosted)])

    @property
    def ranker_names(self) -> tuple[str, ...]:
        """The names of the doc rankers these options hold, in the order they run.

        Each view's units are grouped per doc (``best_per_doc``) and, in hybrid search, the
        views' doc rankings fused; then session -> temporal -> recency -> density ->
        session_cap -> MMR run on the docs, and the cut to ``k`` follows them.

        Example:
            >>> SearchOptions.of(mmr=0.5, recency=True).ranker_names
            ('recency', 'mmr')
        """
        return tuple(type(r).KEY for r in self.rankers)


def flat_schema() -> list[tuple[str, Any, bool]]:
    """Every key of the flat options, in order: ``(key, type, in_file)``.

    ``type`` is what an experiment file takes for the key (a field's ``file`` type, ``bool``
    for a switch) or, for a ``table`` config, its class; ``in_file`` is False for a key only
    Python callers give (``projects``).
    """
    out: list[tuple[str, Any, bool]] = []
    for f in fields(SearchOptions):
        if f.name in ("k", "now"):
            out.append((f.flat, f.file, f.in_file))
        elif f.name in ("filters", "retrieval"):
            for g in fields(f.hint):
                config = _config(g.hint)
                out += _config_schema(config) if config else [(g.flat, g.file, g.in_file)]
        else:
            for config in configs():
                out += _config_schema(config)
    return out


def _config_schema(config: type) -> list[tuple[str, Any, bool]]:
    """A config's flat keys and their file types (see :func:`flat_schema`)."""
    form, key = config.FORM, config.KEY  # type: ignore[attr-defined]
    if form == "table":
        return [(key, config, True)]
    if form == "value":
        return [(key, fields(config)[0].file, True)]
    return [(key, bool, True), *((f.flat, f.file, f.in_file) for f in fields(config))]


def _config(hint: Any) -> type | None:
    """The config class of a ``Config | None`` annotation (None: no config)."""
    if get_origin(hint) in (Union, types.UnionType):
        return next((a for a in get_args(hint) if is_config(a)), None)
    return hint if is_config(hint) else None


def _part(cls: type, options: Mapping[str, Any]) -> Any:
    """A part of the options (:class:`Filters`, :class:`RetrievalOptions`) from the flat form."""
    given = {}
    for f in fields(cls):
        config = _config(f.hint)
        if config is not None:
            given[f.name] = from_flat(config, options)
        elif f.flat in options:
            given[f.name] = options[f.flat]
    return cls(**given)


def _flat_part(part: Any) -> dict[str, Any]:
    """The flat form of a part of the options."""
    out: dict[str, Any] = {}
    for f in fields(type(part)):
        config = _config(f.hint)
        value = getattr(part, f.name)
        out |= flat(value, config) if config is not None else {f.flat: value}
    return out


def doc_rankers(options: SearchOptions) -> list[Ranker]:
    """The doc rankers ``options`` switch on, in the order they run (by ``STAGE``)."""
    return list(options.rankers)
