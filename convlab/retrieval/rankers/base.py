"""The ranker registry: every ranker registers its class here with ``@RANKERS.register(name)``.

A ranker is a small frozen record of its parameters whose call is
``(Candidates, RankContext) -> Candidates`` (:class:`convlab.protocols.Ranker`); it is made from
the search options by its :meth:`~RegisteredRanker.from_options`, so the options name the
rankers they switch on (:attr:`convlab.retrieval.SearchOptions.ranker_names`) and
:func:`convlab.retrieval.rankers.doc_rankers` resolves each name here. A new ranker is one
file: the class, its ``from_options`` and its registration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Self

from convlab.protocols import Candidates, RankContext
from convlab.registry import Registry

if TYPE_CHECKING:
    from convlab.retrieval.options import SearchOptions

__all__ = ["RANKERS", "RegisteredRanker"]


class RegisteredRanker(Protocol):
    """A ranker of :data:`RANKERS`: a :class:`convlab.protocols.Ranker` made from the options."""

    @classmethod
    def from_options(cls, options: SearchOptions) -> Self:
        """The ranker with the parameters ``options`` give it."""
        ...

    def __call__(self, candidates: Candidates, context: RankContext) -> Candidates:
        """New candidates: rescored, reordered, grouped or cut."""
        ...


RANKERS: Registry[type[RegisteredRanker]] = Registry("ranker")
"""Ranker classes by name: ``best_per_doc``, ``recency``, ``density``, ``mmr``, ``temporal``,
``session_cap``."""
