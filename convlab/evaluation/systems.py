"""Systems: named retrieval configurations that an evaluation compares.

A :class:`System` is a strategy's units searched densely, by BM25 (``lexical``) or both fused
(``hybrid``), with or without rankers (:class:`convlab.retrieval.SearchOptions`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from convlab.retrieval import Retrieval, SearchOptions

__all__ = ["System", "default_systems"]


@dataclass(frozen=True, slots=True, kw_only=True)
class System:
    """A named retrieval configuration.

    Attributes:
        name: how reports call it.
        strategy: whose units are searched.
        retrieval: ``dense``, ``lexical`` (``bm25``) or ``hybrid`` (:class:`Retrieval`).
        options: rankers and filters (``k`` and the scope are set by the evaluation).
    """

    name: str
    strategy: str
    retrieval: Retrieval = Retrieval.DENSE
    options: SearchOptions = field(default_factory=SearchOptions)

    def __post_init__(self) -> None:
        # a name is accepted ("bm25" too, as reports name lexical systems); stored as the Enum
        object.__setattr__(self, "retrieval", Retrieval(self.retrieval))


def default_systems(strategies: list[str]) -> list[System]:
    """Each strategy dense; BM25 and hybrid over ``message`` units (or the first strategy)."""
    systems = [System(name=s, strategy=s) for s in strategies]
    lex = "message" if "message" in strategies else strategies[0]
    systems.append(System(name=f"bm25:{lex}", strategy=lex, retrieval=Retrieval.LEXICAL))
    systems.append(System(name=f"hybrid:{lex}", strategy=lex, retrieval=Retrieval.HYBRID))
    if "turn_pair" in strategies and lex != "turn_pair":
        systems.append(
            System(name="hybrid:turn_pair", strategy="turn_pair", retrieval=Retrieval.HYBRID)
        )
    return systems
