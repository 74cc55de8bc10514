"""A second retrieval round seeded by the first hits (multi-hop questions).

A multi-hop question ("Who did Evan meet on his trip to Canada, and who did he come back
with?") needs evidence that shares few words with the question but many with the first
evidence found. The first round ranks docs for the question; each of its ``seeds`` best docs
then becomes a query of its own (its best unit: the unit's text for BM25, its stored vector
for the dense view: nothing is embedded again), searched in the same rows; the rankings are
fused by weighted reciprocal rank fusion with a decay, the first round weight 1 and seed ``i``
(from 1) ``decay ** i``:

``score(d) = sum_r w_r / (k + rank_r(d))``  (Cormack, Clarke & Buettcher, SIGIR 2009)

so the first round leads and a seed's neighbours come in behind it. Not term expansion (RM3,
:mod:`convlab.retrieval.prf`): each seed is searched whole. The values 3 seeds, decay 0.5 and
k 60 were fixed before any run.

Example:
    >>> a = Candidates.of([1, 2], [9.0, 8.0], ["d1", "d2"])
    >>> b = Candidates.of([7, 3], [5.0, 4.0], ["d2", "d3"])
    >>> fused = fuse_rounds([a, b], SecondRound(seeds=1, decay=0.5, k=1))
    >>> fused.docs, fused.rows.tolist(), fused.scores.round(4).tolist()
    (('d2', 'd1', 'd3'), [7, 1, 3], [0.5833, 0.5, 0.1667])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, ClassVar

import numpy as np
from msgspec import Meta

from convlab.config import check
from convlab.protocols import Candidates, Query

__all__ = ["SecondRound", "fuse_rounds", "seeded_rounds"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SecondRound:
    """The second round's settings: ``second_round = {...}`` in the options.

    Attributes:
        seeds: the first round's best docs searched again as queries (1 to 100).
        decay: seed ``i`` (from 1) weighs ``decay ** i`` in the fusion, the first round 1
            (0 to 1).
        k: RRF's constant (1 to 1,000; 60 as Cormack et al.).

    Raises:
        ValueError: a value out of its range.
    """

    KEY: ClassVar[str] = "second_round"
    FORM: ClassVar[str] = "table"

    seeds: Annotated[int, Meta(ge=1, le=100)] = 3
    decay: Annotated[float, Meta(ge=0.0, le=1.0)] = 0.5
    k: Annotated[int, Meta(ge=1, le=1000)] = 60

    def __post_init__(self) -> None:
        check(self, "second_round")


def fuse_rounds(rounds: Sequence[Candidates | None], config: SecondRound) -> Candidates:
    """The rounds' doc rankings (the first round, then each seed's) fused by decayed RRF.

    Each doc keeps the row of the round that ranked it best (ties: the earlier round); the
    docs come back by fused score, ties in order of first appearance.

    Raises:
        ValueError: a round whose candidates are not grouped per doc.
    """
    score: dict[str, float] = {}
    row: dict[str, tuple[int, int]] = {}  # doc -> (best rank, row)
    for r, found in enumerate(rounds):
        if found is None:
            continue
        if found.docs is None:
            raise ValueError("the second round fuses docs: group the candidates per doc first")
        weight = config.decay**r
        for rank, (doc, unit) in enumerate(zip(found.docs, found.rows.tolist(), strict=True), 1):
            score[doc] = score.get(doc, 0.0) + weight / (config.k + rank)
            if doc not in row or rank < row[doc][0]:
                row[doc] = (rank, unit)
    docs = list(score)
    values = np.array([score[d] for d in docs], dtype=np.float64)
    order = np.argsort(-values, kind="stable")
    return Candidates.of([row[docs[i]][1] for i in order], values[order], [docs[i] for i in order])


def seeded_rounds(
    first: Candidates | None,
    config: SecondRound,
    seed_query: Callable[[int], Query],
    search: Callable[[Query], Candidates | None],
) -> Candidates | None:
    """The first round fused with the rounds of its ``config.seeds`` best docs.

    Args:
        first: the first round's docs (grouped per doc), best first; None: nothing found.
        config: the second round's settings.
        seed_query: the query a row (a doc's best unit) makes.
        search: one round: a query's docs in the first round's rows, grouped per doc.
    """
    if first is None or len(first) == 0:
        return first
    seeds = first.rows[: config.seeds].tolist()
    return fuse_rounds([first, *(search(seed_query(row)) for row in seeds)], config)
