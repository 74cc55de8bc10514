"""How an evaluation is run: :class:`EvalConfig`, its scopes and the headline metrics."""

from __future__ import annotations

from dataclasses import dataclass, field

from convlab.model import MAX_TOKENS
from convlab.pipeline.policy import ContentPolicy

__all__ = ["HEADLINE", "JUDGED_METRICS", "LONGMEMEVAL_METRICS", "SCOPES", "EvalConfig"]

# the metrics of the headline tables: finding the evidence, ranking it, bringing it back
HEADLINE = ("recall@5", "recall@10", "ndcg@10", "coverage@512")
SCOPES = ("conversation", "haystack", "corpus")
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
    budgets: tuple[int, ...] = (128, 256, 512, 1024, 2048)
    depth: int = 100
    scope: str = "conversation"
    baseline: str | None = None
    max_tokens: int = MAX_TOKENS
    policy: ContentPolicy = field(default_factory=ContentPolicy)
    seed: int = 0
    headline: tuple[str, ...] = HEADLINE
    resurrection: tuple[str, ...] = ("unit",)

    def __post_init__(self) -> None:
        from convlab.resurrection import POLICIES

        if self.scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
        if not self.resurrection:
            raise ValueError("resurrection needs at least one policy")
        for name in self.resurrection:
            POLICIES.get(name)  # an unknown name fails here, listing the valid ones
        if len(set(self.resurrection)) != len(self.resurrection):
            raise ValueError(f"resurrection names a policy twice: {self.resurrection}")
