"""The ranker registry: every ranker registers its class here with ``@RANKERS.register(name)``.

A ranker is a small frozen dataclass of its parameters, and that dataclass is its config: its
fields declare their types and bounds (``Annotated[float, msgspec.Meta(ge=0, le=1)]``,
:mod:`convlab.config`), its ``KEY`` (the registered name) and ``FORM`` say how the flat search
options write it (``mmr = 0.7``, ``temporal = {boost = 1.0}``, ``recency = true``), and its
``STAGE`` where it runs among the doc rankers. Its call is ``(Candidates, RankContext) ->
Candidates`` (:class:`convlab.protocols.Ranker`). The search options hold the rankers they
switch on (:attr:`convlab.retrieval.SearchOptions.rankers`) and read the flat form through
:data:`RANKERS` (:func:`configs`), so an experiment file's schema follows each class. A new
ranker is one file: the class, its config fields and its registration.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from convlab.config import is_config
from convlab.protocols import Candidates, RankContext
from convlab.registry import Registry

__all__ = ["RANKERS", "RegisteredRanker", "configs"]


class RegisteredRanker(Protocol):
    """A doc ranker of :data:`RANKERS` that the options switch on: its own config.

    Attributes:
        KEY: its name in :data:`RANKERS` and its key in the flat options.
        FORM: how the flat options write it (:data:`convlab.config.FORMS`).
        STAGE: the doc rankers run by ascending stage (session 10, temporal 20, recency 30,
            density 40, session_cap 50, mmr 60).
    """

    KEY: ClassVar[str]
    FORM: ClassVar[str]
    STAGE: ClassVar[int]

    def __call__(self, candidates: Candidates, context: RankContext) -> Candidates:
        """New candidates: rescored, reordered, grouped or cut."""
        ...


RANKERS: Registry[type[Any]] = Registry("ranker")
"""Ranker classes by name: ``best_per_doc`` (every view's grouping, no option), ``density``,
``mmr``, ``recency``, ``session``, ``session_cap``, ``temporal``."""


def configs() -> list[type[RegisteredRanker]]:
    """The ranker classes the options may switch on (those with a ``KEY``), by stage.

    Raises:
        ValueError: a class registered under another name than its ``KEY``.
    """
    out = []
    for name, cls in RANKERS.items():
        if not is_config(cls):
            continue
        if name != cls.KEY:
            raise ValueError(f"ranker {name!r} has KEY {cls.KEY!r}; they must be the same")
        out.append(cls)
    return sorted(out, key=lambda c: c.STAGE)
