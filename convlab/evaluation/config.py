"""How an evaluation is run: :class:`EvalConfig`, its scopes and the headline metrics."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from convlab.defaults import BUDGET, BUDGETS, POLICY
from convlab.model import MAX_TOKENS
from convlab.pipeline.keys import KeyExpansion
from convlab.pipeline.policy import ContentPolicy
from convlab.specs import UnitSpec
from convlab.systems.hits import DEPTH

__all__ = [
    "HEADLINE",
    "JUDGED_METRICS",
    "LONGMEMEVAL_METRICS",
    "PROTOCOLS",
    "SCOPES",
    "EvalConfig",
]

# the metrics of the headline tables: finding the evidence, ranking it, bringing it back
HEADLINE = ("recall@5", "recall@10", "ndcg@10", f"coverage@{BUDGET}")
SCOPES = ("conversation", "haystack", "corpus")
PROTOCOLS = {
    "convlab": "convlab's own: docs are the data's (turns in chats: a user message and its "
    "reply; messages in dialogs), relevant docs those holding the labelled evidence (on "
    "LongMemEval a has_answer message of either role), convlab's measures (ir_measures)",
    "longmemeval": "LongMemEval's own (Wu et al., ICLR 2025; src/retrieval of its repository): "
    "keys are user messages only (the assistant's text is not indexed), a key is gold by the "
    "official noans rule, official recall_any, recall_all and ndcg_any at 1, 3, 5, 10, 30, 50 "
    "over every key of the haystack, averaged strict and over non-abstention questions",
}
"""The evaluation protocols (``eval.run --protocol``), each with what it means, for reports."""
# beside the headline when the labels are pooled judgments: how much of the top 10 was judged,
# and a measure that ignores unjudged docs (convlab.evaluation.metrics)
JUDGED_METRICS = ("judged@10", "bpref")
# LongMemEval's retrieval measures (recall_any = success, recall_all, nDCG at 1, 5, 10), at turn
# and session level
LONGMEMEVAL_METRICS = tuple(
    f"{level}{m}@{k}"
    for level in ("", "session:")
    for m in ("success", "recall_all", "ndcg")
    for k in (1, 5, 10)
)


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalConfig:
    """Settings of an evaluation (saved beside its results).

    ``resurrection`` names the resurrection policies (:data:`convlab.resurrection.POLICIES`)
    compared at each budget; the first one gives ``coverage@B`` and the ``budgets`` frame, every
    one of them the ``policy_budgets`` frame (the system x policy grid) when there are several.
    ``protocol`` (:data:`PROTOCOLS`) is how the run is judged; ``longmemeval`` adds the
    official measures (:mod:`convlab.evaluation.lme_official`) and needs a policy without the
    assistant's text.
    """

    metrics: tuple[str, ...] = (
        "recall@1",
        "recall@3",
        "recall@5",
        "recall@10",
        "recall@20",
        "success@5",
        "recall_all@5",
        "ndcg@10",
        "mrr",
    )
    budgets: tuple[int, ...] = BUDGETS
    depth: int = DEPTH
    scope: str = "conversation"
    baseline: str | None = None
    max_tokens: int = MAX_TOKENS
    policy: ContentPolicy = field(default_factory=ContentPolicy)
    seed: int = 0
    headline: tuple[str, ...] = HEADLINE
    resurrection: tuple[str, ...] = (POLICY,)
    protocol: str = "convlab"

    def __post_init__(self) -> None:
        from convlab.resurrection import get_policy

        if self.scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}")
        if self.protocol == "longmemeval" and self.policy.assistant_text:
            raise ValueError(
                "the longmemeval protocol keys on user messages only: the policy must leave "
                "the assistant's text out (assistant_text=False)"
            )
        if not self.resurrection:
            raise ValueError("resurrection needs at least one policy")
        for name in self.resurrection:
            get_policy(name)  # an unknown name or a bad parameter fails here
        if len(set(self.resurrection)) != len(self.resurrection):
            raise ValueError(f"resurrection names a policy twice: {self.resurrection}")
        UnitSpec("any", self.max_tokens, self.policy)  # UnitSpec's checks of max_tokens

    def units(
        self,
        strategies: Iterable[str],
        text_format: str | None = None,
        keys: KeyExpansion | None = None,
    ) -> list[UnitSpec]:
        """What the evaluation embeds of each strategy: a :class:`UnitSpec` each.

        ``text_format``: a system's own text format, over :attr:`policy`'s; ``keys``: its key
        expansion (None: none).
        """
        policy = self.policy if text_format is None else self.policy.with_text_format(text_format)
        return [UnitSpec(s, self.max_tokens, policy, keys) for s in strategies]
