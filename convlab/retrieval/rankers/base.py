"""The ranker registry: every ranker registers its factory here with ``@RANKERS.register(name)``.

A ranker is a small frozen record of its parameters whose call is
``(Candidates, RankContext) -> Candidates`` (:class:`convlab.protocols.Ranker`).
"""

from __future__ import annotations

from collections.abc import Callable

from convlab.protocols import Ranker
from convlab.registry import Registry

__all__ = ["RANKERS"]

RANKERS: Registry[Callable[..., Ranker]] = Registry("ranker")
