"""``unit+doc``: the unit's chunks first, then the rest of its doc while the budget allows."""

from __future__ import annotations

from dataclasses import dataclass

from convlab.protocols import Layout
from convlab.resurrection.policies import POLICIES

__all__ = ["UnitDocPolicy"]


@POLICIES.register("unit+doc")
@dataclass(frozen=True, slots=True, kw_only=True)
class UnitDocPolicy:
    """Bring back the unit (as ``unit``), then grow it to the hit's doc chunk by chunk.

    What comes back, in the order the walk offers it: first the unit's chunks (one piece: all
    of them fit or the hit is skipped), then each chunk of the hit's doc (its ``doc_id``;
    without one, the unit's docs) that the unit does not hold, one piece per chunk in
    conversation order; a chunk that does not fit the remaining budget is left out and the next
    one is tried. Cost: the tokens of the chunks brought back that were not in the context.

    Example:
        >>> UnitDocPolicy().name
        'unit+doc'
    """

    name = "unit+doc"

    def pieces(self, unit_id: str, doc_id: str | None, layout: Layout) -> list[list[str]]:
        """The unit's chunks, then one piece per further chunk of the doc."""
        unit = layout.unit_chunks[unit_id]
        held = set(unit)
        doc = layout.chunks_of_docs(layout.hit_docs(unit_id, doc_id))
        return [unit, *([c] for c in doc if c not in held)]
