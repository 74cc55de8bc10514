"""Group per doc: a doc takes the score of its best unit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

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

    Every view groups its units so, whatever the options: it is no option (no ``KEY``) and
    takes no parameter.

    Example:
        rows 0 (doc a, 0.5), 1 (doc a, 0.7), 2 (doc b, 0.6) give a 0.7 (row 1), then b 0.6.
    """

    def __call__(self, candidates: Candidates, context: RankContext) -> Candidates:
        """The docs' best units, with ``docs`` set."""
        if len(candidates) == 0:
            return Candidates.of([], [], [])
        offsets, codes, names = _doc_codes(context.doc_ids)
        rows, scores = candidates.rows, candidates.scores
        starts, counts = offsets[rows], offsets[rows + 1] - offsets[rows]
        if np.all(counts == 1):  # one doc per unit: the pairs are the candidates
            pair_of, doc = np.arange(len(rows)), codes[starts]
        else:  # a unit standing for several docs counts for each, in its docs' order
            pair_of = np.repeat(np.arange(len(rows)), counts)
            first = np.repeat(starts - np.cumsum(counts) + counts, counts)
            doc = codes[first + np.arange(pair_of.size)]
        score = scores[pair_of]
        # first, the first pair per doc in candidate order (the order docs met the dict before)
        _, seen = np.unique(doc, return_index=True)
        # best: the highest score, the first candidate among equal ones (pairs are in order)
        by_score = np.lexsort((np.arange(doc.size), -score))
        docs_sorted, at = np.unique(doc[by_score], return_index=True)
        best = by_score[at]  # pair index of each doc's best unit, docs ascending by code
        order = np.lexsort((seen, rows[pair_of[best]], -score[best]))
        best = best[order]
        return Candidates.of(
            rows[pair_of[best]], score[best], [names[d] for d in docs_sorted[order].tolist()]
        )


_KEPT = 8
"""Doc-code tables kept: one per index searched lately (a fused system has up to six views)."""
_CODES: list[tuple[Sequence[Sequence[str]], tuple[np.ndarray, np.ndarray, list[str]]]] = []


def _doc_codes(doc_ids: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Every row's docs as integer codes: ``(offsets, codes, names)``.

    A row's codes are ``codes[offsets[row]:offsets[row + 1]]``, ``names[code]`` their doc ids.

    Made once per ``doc_ids`` object (a search's, shared by all its queries) and kept for the
    last :data:`_KEPT` ones (the views of a system, searched query after query): the objects
    are held, so none can be another list at the same address.
    """
    for held, made in _CODES:
        if held is doc_ids:
            return made
    index: dict[str, int] = {}
    codes: list[int] = []
    offsets = [0]
    for docs in doc_ids:
        codes.extend(index.setdefault(d, len(index)) for d in docs)
        offsets.append(len(codes))
    made = (np.asarray(offsets, dtype=np.int64), np.asarray(codes, dtype=np.int64), list(index))
    _CODES[:] = [(doc_ids, made), *_CODES[: _KEPT - 1]]
    return made
