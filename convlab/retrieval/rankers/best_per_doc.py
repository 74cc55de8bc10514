"""Group per doc (seeds/000, 001): a doc takes the score of its best unit."""

from __future__ import annotations

from dataclasses import dataclass

from convlab.protocols import Candidates, RankContext
from convlab.retrieval.rankers.base import RANKERS

__all__ = ["BestPerDoc"]


@RANKERS.register("best_per_doc")
@dataclass(frozen=True, slots=True)
class BestPerDoc:
    """One candidate per doc: ``score(doc) = max over its units u of score(u)``.

    A doc is a turn in chats and a message in dialogs (``units.doc_ids``); a unit that stands for
    several docs counts for each. Docs come back by score, then by their best unit's row; among
    units of equal score the first candidate wins.

    Example:
        rows 0 (doc a, 0.5), 1 (doc a, 0.7), 2 (doc b, 0.6) give a 0.7 (row 1), then b 0.6.
    """

    def __call__(self, candidates: Candidates, context: RankContext) -> Candidates:
        """The docs' best units, with ``docs`` set."""
        best: dict[str, tuple[float, int]] = {}
        for row, score in zip(candidates.rows.tolist(), candidates.scores.tolist(), strict=True):
            for doc in context.doc_ids[row]:
                if doc not in best or score > best[doc][0]:
                    best[doc] = (score, row)
        docs = sorted(best, key=lambda d: (-best[d][0], best[d][1]))
        return Candidates.of([best[d][1] for d in docs], [best[d][0] for d in docs], docs)
