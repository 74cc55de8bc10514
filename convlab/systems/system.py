"""Systems: named retrieval configurations that an evaluation compares, declared as data.

A :class:`System` is one or more **views** (:class:`View`: a strategy's units searched densely,
by BM25 or both: a hybrid view is that strategy's dense and BM25 views fused by
:attr:`RetrievalOptions.fusion <convlab.retrieval.RetrievalOptions.fusion>`), a **fusion** of the
views' doc rankings (a method of :data:`convlab.fusion.FUSIONS`, with fixed per-view ``weights``
or weights chosen by grouped cross-validation, :class:`Tuning`), **rankers** and filters
(:class:`SearchOptions`, applied in every view's search), a **resurrection policy** (a name of
:data:`convlab.resurrection.POLICIES`) and a **text format** (how a dialog message is written
before it is chunked: :data:`convlab.pipeline.policy.TEXT_FORMATS`; LoCoMo's own RAG format is
``locomo``).

A one-view system is written with ``strategy`` and ``retrieval`` alone. The same records are
read from an experiment file (:func:`convlab.systems.file.read_systems`).

Example:
    >>> System(name="bm25:sequential", strategy="sequential", retrieval="lexical").views[0].name
    'bm25:sequential'
    >>> s = System(name="fusion", views=("bm25:message", "sequential"), weights=(1, 0.5))
    >>> [v.name for v in s.views], s.strategy, s.fused
    (['bm25:message', 'sequential'], 'message', True)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from convlab.defaults import FOLDS
from convlab.index.bm25 import BM25Params
from convlab.pipeline.keys import KeyExpansion
from convlab.retrieval import Retrieval, SearchOptions

__all__ = ["FUSION_STRATEGIES", "VIEW_EMBEDDERS", "System", "Tuning", "View", "default_systems"]

_PREFIX = {Retrieval.DENSE: "", Retrieval.LEXICAL: "bm25:", Retrieval.HYBRID: "hybrid:"}
_PARSE = {
    "dense": Retrieval.DENSE,
    "bm25": Retrieval.LEXICAL,
    "lexical": Retrieval.LEXICAL,
    "hybrid": Retrieval.HYBRID,
}

_PARAMS = re.compile(r"^(?P<kind>[a-z0-9]+)(?:\(k1=(?P<k1>[0-9.]+),b=(?P<b>[0-9.]+)\))?$")
"""A view prefix: ``bm25``, or ``bm25(k1=0.9,b=0.2)`` with BM25 parameters."""

VIEW_EMBEDDERS = ("static",)
"""Embedders a dense view can name as its prefix (``static:sequential``): registered names of
:data:`convlab.embed.EMBEDDERS` that need no model id. A view without one is embedded by the
evaluation's or the store's embedder."""

FUSION_STRATEGIES = ("message", "sequential", "turn_pair")
"""The strategies whose views the default fused systems combine (dense and BM25 each)."""


@dataclass(frozen=True, slots=True)
class View:
    """A strategy's units searched one way: one ranking of docs per query.

    Attributes:
        strategy: whose units are searched.
        retrieval: ``dense``, ``lexical`` (BM25) or ``hybrid`` (:class:`Retrieval`: the dense
            and BM25 rankings fused by the options' ``fusion``, through the same
            :func:`convlab.fusion.fuse_carrying` as a system's views).
        bm25: the BM25 parameters of this view (lexical or hybrid only; None: the system's
            options', by default the index's own). Named ``bm25(k1=0.9,b=0):message``.
        embedder: the embedder of a dense view's units and queries, one of
            :data:`VIEW_EMBEDDERS` (None: the evaluation's or store's). Named
            ``static:sequential``.

    Example:
        >>> View.parse("bm25(k1=0.9,b=0):message").bm25
        BM25Params(k1=0.9, b=0.0)
        >>> View.parse("static:sequential").embedder, View.parse("static:sequential").name
        ('static', 'static:sequential')
    """

    strategy: str
    retrieval: Retrieval = Retrieval.DENSE
    bm25: BM25Params | None = None
    embedder: str | None = None

    def __post_init__(self) -> None:
        if not self.strategy:
            raise ValueError("a view needs a strategy")
        object.__setattr__(self, "retrieval", Retrieval(self.retrieval))
        if self.bm25 is not None and not self.retrieval.needs_bm25:
            raise ValueError(f"view {self.strategy!r}: BM25 parameters need a lexical view")
        if self.embedder is not None:
            if self.embedder not in VIEW_EMBEDDERS:
                raise ValueError(
                    f"view {self.strategy!r}: embedder {self.embedder!r} is not one of "
                    f"{', '.join(VIEW_EMBEDDERS)}"
                )
            if self.retrieval is not Retrieval.DENSE:
                raise ValueError(
                    f"view {self.embedder}:{self.strategy}: an embedder names a dense view "
                    f"(write {self.embedder}:{self.strategy})"
                )

    @property
    def name(self) -> str:
        """``sequential``, ``bm25:sequential``, ``hybrid:sequential``, ``static:sequential``, ..."""
        prefix = _PREFIX[self.retrieval]
        if self.bm25 is not None:
            prefix = f"{prefix[:-1]}(k1={self.bm25.k1:g},b={self.bm25.b:g}):"
        if self.embedder is not None:
            prefix = f"{self.embedder}:"
        return f"{prefix}{self.strategy}"

    @property
    def index_key(self) -> str:
        """What names this view's built units: its strategy, or ``static:sequential``.

        A view of another embedder is built apart: the same units, embedded by that embedder.
        """
        return self.strategy if self.embedder is None else f"{self.embedder}:{self.strategy}"

    @classmethod
    def parse(cls, text: str | View) -> View:
        """A view from its name: ``sequential``, ``dense:sequential``, ``bm25:message``, ...

        ``static:sequential`` is the dense view embedded by the static embedder
        (:data:`VIEW_EMBEDDERS`).

        Raises:
            ValueError: an unknown prefix (naming the valid ones) or malformed parameters.
        """
        if isinstance(text, View):
            return text
        head, sep, tail = str(text).partition(":")
        if sep and head in VIEW_EMBEDDERS:
            inner = cls.parse(tail)
            if inner.retrieval is not Retrieval.DENSE or inner.embedder is not None:
                raise ValueError(f"view {text!r}: {head}: names a dense view ({head}:STRATEGY)")
            return cls(inner.strategy, embedder=head)
        if not sep:
            return cls(head)
        m = _PARAMS.match(head)
        if m is None and "(" in head:
            raise ValueError(f"view {text!r}: write BM25 parameters as bm25(k1=K,b=B):STRATEGY")
        if m is None or m["kind"] not in _PARSE:
            kind = m["kind"] if m else head
            valid = ", ".join([*_PARSE, *VIEW_EMBEDDERS])
            raise ValueError(f"view {text!r}: prefix {kind!r} is not one of {valid}")
        bm25 = None
        if m["k1"] is not None:
            try:
                bm25 = BM25Params(k1=float(m["k1"]), b=float(m["b"]))
            except ValueError as exc:
                raise ValueError(f"view {text!r}: {exc}") from None
        return cls(tail, _PARSE[m["kind"]], bm25)


@dataclass(frozen=True, slots=True, kw_only=True)
class Tuning:
    """How a fused system's weights are chosen: grouped cross-validation by conversation.

    The first view keeps weight 1; every other view's weight is drawn from ``weights`` (and
    each fusion parameter of ``params`` from its values); ``samples`` settings are drawn from
    that grid (seeded; all of it when it is smaller) and each fold picks the best on its
    training conversations (:func:`convlab.evaluation.tune.tune`).

    Attributes:
        weights: the weight grid of each view after the first.
        params: fusion parameters tuned too (``{"k": (10, 60)}`` for RRF).
        samples: settings drawn from the grid.
        metric: what the choice maximises.
        folds: folds (at most the number of conversations; fewer conversations, fewer folds).
        seed: the draw's seed.
    """

    weights: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0)
    params: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    samples: int = 64
    metric: str = "recall@5"
    folds: int = FOLDS
    seed: int = 0

    def __post_init__(self) -> None:
        from convlab.metric_names import parse_metric

        object.__setattr__(self, "weights", tuple(float(w) for w in self.weights))
        object.__setattr__(self, "params", {k: tuple(v) for k, v in dict(self.params).items()})
        if not self.weights or any(w < 0 for w in self.weights):
            raise ValueError(f"tuning weights {self.weights}: give one or more weights >= 0")
        if self.samples < 1:
            raise ValueError(f"tuning samples is {self.samples}; it must be >= 1")
        if self.folds < 2:
            raise ValueError(f"tuning folds is {self.folds}; cross-validation needs 2 or more")
        parse_metric(self.metric)

    def as_dict(self) -> dict[str, Any]:
        """The tuning as plain data (for run configs and experiment files)."""
        return {
            "weights": list(self.weights),
            "params": {k: list(v) for k, v in self.params.items()},
            "samples": self.samples,
            "metric": self.metric,
            "folds": self.folds,
            "seed": self.seed,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class System:
    """A named retrieval configuration.

    Attributes:
        name: how reports call it.
        strategy: the strategy of a one-view system; for several views, the first view's
            (set from ``views`` when left empty).
        retrieval: the retrieval of a one-view system (:class:`Retrieval` or its name).
        options: rankers and filters, applied in every view's search (``k`` and the scope are
            set by the evaluation).
        views: the views (names like ``bm25:sequential`` or :class:`View`); empty for one view
            made of ``strategy`` and ``retrieval``.
        fusion: the fusion method of several views (:data:`convlab.fusion.FUSIONS`).
        fusion_params: its parameters (``norm`` for convex, combsum and combmnz; ``k`` for rrf).
        weights: one weight per view; ``None`` for all 1 (or for the tuned ones).
        tuning: choose the weights by cross-validation instead (:class:`Tuning`).
        resurrection: the resurrection policy of the system's ``coverage@B`` and budgets
            (``None``: the evaluation's first policy).
        text: how dialog messages are written before chunking (``None``: the evaluation's
            :class:`convlab.pipeline.policy.ContentPolicy`).
        keys: keyphrases appended to every view's units
            (:class:`convlab.pipeline.keys.KeyExpansion`, or its plain data; ``None``: none).

    Raises:
        ValueError: no strategy and no views, weights that do not match the views, tuning or
            weights on one view, an unknown fusion method, resurrection policy or text format.
    """

    name: str
    strategy: str = ""
    retrieval: Retrieval = Retrieval.DENSE
    options: SearchOptions = field(default_factory=SearchOptions)
    views: tuple[View, ...] = ()
    fusion: str = "convex"
    fusion_params: Mapping[str, Any] = field(default_factory=dict)
    weights: tuple[float, ...] | None = None
    tuning: Tuning | None = None
    resurrection: str | None = None
    text: str | None = None
    keys: KeyExpansion | None = None

    def __post_init__(self) -> None:
        from convlab.fusion import FUSIONS
        from convlab.resurrection import get_policy

        if not self.name:
            raise ValueError("a system needs a name")
        views = tuple(View.parse(v) for v in self.views)
        if not views:
            if not self.strategy:
                raise ValueError(f"system {self.name!r} needs a strategy or views")
            views = (View(self.strategy, Retrieval(self.retrieval)),)
        if len({v.name for v in views}) != len(views):
            raise ValueError(f"system {self.name!r} names a view twice: {[v.name for v in views]}")
        object.__setattr__(self, "views", views)
        object.__setattr__(self, "strategy", self.strategy or views[0].strategy)
        object.__setattr__(self, "retrieval", views[0].retrieval)
        object.__setattr__(self, "fusion_params", dict(self.fusion_params))
        if self.weights is not None:
            object.__setattr__(self, "weights", tuple(float(w) for w in self.weights))
        if len(views) > 1:
            FUSIONS.get(self.fusion)  # an unknown method: the error lists the valid ones
            if self.weights is not None and len(self.weights) != len(views):
                raise ValueError(
                    f"system {self.name!r}: {len(self.weights)} weights for {len(views)} views"
                )
        elif self.weights is not None or self.tuning is not None:
            raise ValueError(f"system {self.name!r} has one view: weights and tuning need several")
        if self.resurrection is not None:
            get_policy(self.resurrection)  # a name or a spec (window:n=2)
        if self.text is not None:
            from convlab.pipeline.policy import TEXT_FORMATS

            TEXT_FORMATS.get(self.text)  # an unknown format: the error lists the valid ones
        if self.keys is not None and not isinstance(self.keys, KeyExpansion):
            object.__setattr__(self, "keys", KeyExpansion(**dict(self.keys)))

    @property
    def fused(self) -> bool:
        """Several views fused into one ranking."""
        return len(self.views) > 1

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> System:
        """A system from :meth:`as_dict`'s plain data (an experiment file's ``[[systems]]``).

        Raises:
            ValueError: an unknown key (naming the valid ones) or an invalid value.
        """
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(record) - known)
        if unknown:
            raise ValueError(
                f"system {record.get('name')!r}: unknown key(s) {', '.join(unknown)}; "
                f"valid: {', '.join(sorted(known))}"
            )
        fields = dict(record)
        if "options" in fields:
            fields["options"] = SearchOptions.from_dict(fields["options"])
        if "tuning" in fields:
            fields["tuning"] = Tuning(**fields["tuning"])
        for key in ("views", "weights"):
            if key in fields:
                fields[key] = tuple(fields[key])
        return cls(**fields)

    def as_dict(self) -> dict[str, Any]:
        """The system as plain data: what the run's ``config.json`` and experiment files hold."""
        out: dict[str, Any] = {"name": self.name}
        if self.fused:
            out["views"] = [v.name for v in self.views]
            out["fusion"] = self.fusion
            out["fusion_params"] = dict(self.fusion_params)
            if self.weights is not None:
                out["weights"] = list(self.weights)
            if self.tuning is not None:
                out["tuning"] = self.tuning.as_dict()
        elif self.views[0].embedder is not None:
            out["views"] = [self.views[0].name]
        else:
            out["strategy"] = self.strategy
            out["retrieval"] = str(self.retrieval)
        default = SearchOptions().as_dict()
        out["options"] = {k: v for k, v in self.options.as_dict().items() if v != default[k]}
        for key in ("resurrection", "text"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.keys is not None:
            out["keys"] = self.keys.as_dict()
        return out


def default_systems(strategies: Sequence[str]) -> list[System]:
    """Each strategy dense; BM25 and hybrid over ``message`` units; BM25 over context; fusions.

    Besides one dense system per strategy, ``bm25:message`` and ``hybrid:message`` (or over the
    first strategy) and ``hybrid:turn_pair``: BM25 over the units of ``sequential`` and
    ``turn_pair`` (lexical over context), and two fused systems of BM25 over the units of
    :data:`FUSION_STRATEGIES` (those given) and the dense views of its context strategies:
    ``fusion:convex`` (z-score convex combination) and ``fusion:rrf`` (weighted RRF), their
    weights chosen by cross-validation by conversation.

    Raises:
        ValueError: no strategy.
    """
    strategies = list(strategies)
    if not strategies:
        raise ValueError("the default systems need at least one strategy")
    systems = [System(name=s, strategy=s) for s in strategies]
    lex = "message" if "message" in strategies else strategies[0]
    systems.append(System(name=f"bm25:{lex}", strategy=lex, retrieval=Retrieval.LEXICAL))
    systems.append(System(name=f"hybrid:{lex}", strategy=lex, retrieval=Retrieval.HYBRID))
    if "turn_pair" in strategies and lex != "turn_pair":
        systems.append(
            System(name="hybrid:turn_pair", strategy="turn_pair", retrieval=Retrieval.HYBRID)
        )
    context = [s for s in FUSION_STRATEGIES if s in strategies and s != lex]
    systems += [System(name=f"bm25:{s}", strategy=s, retrieval=Retrieval.LEXICAL) for s in context]
    if context:
        views = tuple(
            [View(lex, Retrieval.LEXICAL)]
            + [View(s, Retrieval.LEXICAL) for s in context]
            + [View(s) for s in context]
        )
        systems.append(
            System(
                name="fusion:convex",
                views=views,
                fusion="convex",
                fusion_params={"norm": "z-score"},
                tuning=Tuning(),
            )
        )
        systems.append(
            System(
                name="fusion:rrf",
                views=views,
                fusion="rrf",
                tuning=Tuning(params={"k": (10, 60)}),
            )
        )
    return systems
