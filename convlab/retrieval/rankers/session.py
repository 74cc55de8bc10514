"""Session-first doc ranking (:mod:`convlab.retrieval.sessions`) as a doc ranker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar

from msgspec import Meta

from convlab.config import check
from convlab.protocols import Candidates, RankContext
from convlab.retrieval.rankers.base import RANKERS
from convlab.retrieval.sessions import session_first
from convlab.schema import session_id

__all__ = ["Session"]


@RANKERS.register("session")
@dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    """Mix each doc's score with its session's best, or keep the top sessions' docs.

    A candidate's session is that of its unit (:func:`convlab.schema.session_id` of the unit's
    conversation and time); the scores are :func:`convlab.retrieval.sessions.session_first`'s.
    In the flat options: ``session = {weight = ..., top = ...}``.

    Attributes:
        weight: the session score's share of a doc's score, in [0, 1].
        top: keep only the docs of this many best sessions (None: every session).

    Raises:
        ValueError: a weight outside [0, 1] or a ``top`` outside [1, 100,000].
    """

    KEY: ClassVar[str] = "session"
    FORM: ClassVar[str] = "table"
    STAGE: ClassVar[int] = 10

    weight: Annotated[float, Meta(ge=0.0, le=1.0)] = 0.5
    top: Annotated[int, Meta(ge=1, le=100_000)] | None = None

    def __post_init__(self) -> None:
        check(self, "session")

    def __call__(self, candidates: Candidates, context: RankContext) -> Candidates:
        """The candidates rescored and reordered (cut to the top sessions' docs when asked)."""
        rows = candidates.rows.tolist()
        sessions = [session_id(str(context.conversation_of_row[r]), context.times[r]) for r in rows]
        mixed, keep = session_first(candidates.scores, sessions, weight=self.weight, top=self.top)
        return candidates.rescored(mixed).take(keep)
