"""Session-first doc ranking (:mod:`convlab.retrieval.sessions`) as a doc ranker."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from convlab.protocols import Candidates, RankContext
from convlab.retrieval.rankers.base import RANKERS
from convlab.retrieval.sessions import SessionFirst, session_first
from convlab.schema import session_id

if TYPE_CHECKING:
    from convlab.retrieval.options import SearchOptions

__all__ = ["Session"]


@RANKERS.register("session")
@dataclass(frozen=True, slots=True)
class Session:
    """Mix each doc's score with its session's best, or keep the top sessions' docs.

    A candidate's session is that of its unit (:func:`convlab.schema.session_id` of the unit's
    conversation and time).
    """

    setting: SessionFirst = field(default_factory=SessionFirst)

    @classmethod
    def from_options(cls, options: SearchOptions) -> Session:
        """``options.session`` (the ranker is named only when it is set)."""
        if options.session is None:
            raise ValueError("the session ranker needs SearchOptions.session")
        return cls(options.session)

    def __call__(self, candidates: Candidates, context: RankContext) -> Candidates:
        """The candidates rescored and reordered (cut to the top sessions' docs when asked)."""
        rows = candidates.rows.tolist()
        sessions = [session_id(str(context.conversation_of_row[r]), context.times[r]) for r in rows]
        mixed, keep = session_first(
            candidates.scores, sessions, weight=self.setting.weight, top=self.setting.top
        )
        return candidates.rescored(mixed).take(keep)
