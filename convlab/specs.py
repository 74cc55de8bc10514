"""Typed specs every part shares: what a unit is (:class:`UnitSpec`), how it is indexed.

:class:`IndexSpec` names the index kind and its parameters. The build
(:func:`convlab.build.build_index`), the store's configuration, ``EvalConfig`` and the search panel
take these two records instead of loose ``strategy``/``max_tokens``/``policy``/
``kind``/``**params`` arguments, so a setting has one name and one default everywhere.

Example:
    >>> UnitSpec("turn_pair").max_tokens
    256
    >>> IndexSpec("hnsw", {"ef_search": 128}).params["ef_search"]
    128
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from convlab.model import MAX_TOKENS, MIN_TOKENS
from convlab.pipeline.keys import KeyExpansion
from convlab.pipeline.policy import ContentPolicy
from convlab.strategies.late import late_window

__all__ = ["IndexSpec", "UnitSpec"]


@dataclass(frozen=True, slots=True)
class UnitSpec:
    """What is embedded: a strategy's units under a token limit, from text a content policy keeps.

    Attributes:
        strategy: a name of :data:`convlab.strategies.STRATEGIES`.
        max_tokens: the longest unit, the model's [CLS] and [SEP] included (at most
            :data:`convlab.model.MAX_TOKENS`).
        policy: what text each block contributes (:class:`ContentPolicy`).
        keys: keyphrases appended to each unit's embedded text (:class:`KeyExpansion`;
            None, the default: none). Resurrection still brings back the chunks' own text.

    Raises:
        ValueError: no strategy, or ``max_tokens`` not an integer in
            ``[MIN_TOKENS, MAX_TOKENS]``.
    """

    strategy: str
    max_tokens: int = MAX_TOKENS
    policy: ContentPolicy = field(default_factory=ContentPolicy)
    keys: KeyExpansion | None = None

    def __post_init__(self) -> None:
        if not self.strategy:
            raise ValueError("a unit spec needs a strategy")
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int):
            raise ValueError(f"max_tokens must be an integer, not {self.max_tokens!r}")
        if not MIN_TOKENS <= self.max_tokens <= MAX_TOKENS:
            raise ValueError(f"max_tokens must be between {MIN_TOKENS} and {MAX_TOKENS} tokens")
        if self.keys is not None and late_window(self.strategy) is not None:
            raise ValueError(f"{self.strategy}: a late strategy pools its chunks' tokens, no keys")


@dataclass(frozen=True, slots=True)
class IndexSpec:
    """How a strategy's vectors are indexed: an index kind and its parameters.

    Attributes:
        kind: a name of :data:`convlab.index.kinds.INDEX_KINDS` (``flat``, ``hnsw``, ``ivf``,
            ``ivfpq``).
        params: the kind's parameters (``ef_search``, ``nlist``, ``nprobe``, ...), read-only.
    """

    kind: str = "flat"
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.kind:
            raise ValueError("an index spec needs a kind")
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def as_dict(self) -> dict[str, Any]:
        """``{"kind": ..., **params}``, as manifests and run configs record it."""
        return {"kind": self.kind, **self.params}
