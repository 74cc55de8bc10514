"""``unit``: exactly the chunks embedded together (resurrection matches embedding); the default."""

from __future__ import annotations

from dataclasses import dataclass

from convlab.protocols import Layout
from convlab.resurrection.policies import POLICIES

__all__ = ["UnitPolicy"]


@POLICIES.register("unit")
@dataclass(frozen=True, slots=True, kw_only=True)
class UnitPolicy:
    """Bring back what was embedded: the hit unit's ``chunk_ids``, never recomputed.

    What comes back: one piece, the unit's chunks in conversation order (turn_pair: the target,
    its turn's paired S0 and its own S0; sequential: the target and the neighbours that fit; a
    window: its chunks). Cost: the tokens of those chunks not already in the context.

    Example:
        >>> UnitPolicy().name
        'unit'
    """

    name = "unit"

    def pieces(self, unit_id: str, doc_id: str | None, layout: Layout) -> list[list[str]]:
        """One piece: the unit's chunks."""
        return [layout.unit_chunks[unit_id]]
