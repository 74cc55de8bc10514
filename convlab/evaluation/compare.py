"""The strategy comparison: labelled data in, a run folder out.

:class:`Comparison` is what one comparison runs (data, systems, budgets, where it writes);
:func:`run_comparison` loads the labelled data
(:func:`~convlab.evaluation.datasets.load_labelled`), evaluates the systems (an experiment file,
by default :data:`~convlab.systems.file.DEFAULT_EXPERIMENT`: one dense system per strategy plus
the lexical, hybrid and fused ones, :func:`~convlab.systems.system.default_systems`) and writes a
run folder (:func:`~convlab.evaluation.runfolder.save_run`) with ``qrels.txt`` beside it. Its
programs, ``python -m eval.run`` and ``convlab eval``, parse the command line into a
:class:`Comparison` (:mod:`convlab.app.cli.eval`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from convlab.defaults import BUDGETS, POLICY

if TYPE_CHECKING:
    from convlab.embed import EmbedStats
    from convlab.evaluation.config import EvalConfig
    from convlab.evaluation.datasets import LabelledData
    from convlab.evaluation.result import Evaluation
    from convlab.systems.system import System

__all__ = [
    "MAX_BUDGET",
    "Comparison",
    "ComparisonRun",
    "check_budgets",
    "check_policies",
    "check_strategies",
    "comparison_config",
    "comparison_systems",
    "run_comparison",
]

MAX_BUDGET = 1_000_000
"""The largest resurrection budget, in tokens."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """One strategy comparison: what it reads, what it runs, where it writes.

    Attributes:
        data: the labelled data (:func:`~convlab.evaluation.datasets.load_labelled`); ``None``
            for the bundled sample.
        conversations: only these conversations (default: all).
        every: every N-th query only (and the conversations it searches).
        strategies: the strategies of the default systems (default: those the experiment file
            names, else the default experiment's).
        budgets: resurrection budgets in tokens.
        resurrection: the resurrection policies compared at each budget.
        scope: where queries search; ``None`` picks from the data.
        systems: an experiment file (default:
            :data:`~convlab.systems.file.DEFAULT_EXPERIMENT`).
        text_format: how dialog messages are written, for every system without its own.
        protocol: how retrieval is judged (:data:`~convlab.evaluation.config.PROTOCOLS`).
        baseline: the system compared against (default: the first).
        out: the run folder.
        cache: the embedding cache folder.
        backend: the MiniLM backend (:data:`convlab.embed.BACKENDS`).
        device: where the model embeds (:class:`convlab.embed.Device`).
        embedder: the embedder's registered name (:data:`convlab.embed.EMBEDDERS`): ``minilm``,
            or ``minilm-ft`` for a fine-tuned model already in the cache (``model_id`` names
            it: ``python -m eval.finetune_cv --all-model`` makes the one of all of LoCoMo).
        model_id: the fine-tuned model's id (``minilm-ft`` only).
        command: the command line that asked for it, recorded in the run's ``config.json``
            with the source's commit (none: neither is recorded).
    """

    data: str | None = None
    conversations: tuple[str, ...] = ()
    every: int = 1
    strategies: tuple[str, ...] = ()
    budgets: tuple[int, ...] = BUDGETS
    resurrection: tuple[str, ...] = (POLICY,)
    scope: str | None = None
    systems: str | None = None
    text_format: str | None = None
    protocol: str = "convlab"
    baseline: str | None = None
    out: str = "runs/eval"
    cache: str = "runs/cache"
    backend: str = "torch"
    device: str = "auto"
    embedder: str = "minilm"
    model_id: str | None = None
    command: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        from convlab.evaluation.config import PROTOCOLS, SCOPES

        if isinstance(self.every, bool) or self.every < 1:
            raise ValueError(f"every is {self.every!r}; it must be a whole number of at least 1")
        check_strategies(",".join(self.strategies), empty=True)
        if not self.budgets or any(not 1 <= b <= MAX_BUDGET for b in self.budgets):
            raise ValueError(f"budgets {self.budgets}: give whole numbers from 1 to {MAX_BUDGET:,}")
        check_policies(",".join(self.resurrection))
        if self.scope is not None and self.scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}")


@dataclass(frozen=True, slots=True)
class ComparisonRun:
    """What :func:`run_comparison` made: the evaluation, its report and the embedding counts."""

    evaluation: Evaluation
    report: Path
    embedding: EmbedStats


def check_strategies(text: str, *, empty: bool = False) -> list[str]:
    """The strategies of ``--strategies a,b,c``, in order (none at all only with ``empty``).

    Raises:
        ValueError: some are not registered, naming them and the valid ones.
    """
    from convlab.strategies import STRATEGIES

    strategies = [s for s in text.split(",") if s]
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown or not (strategies or empty):
        raise ValueError(f"unknown strategies {unknown}; valid: {', '.join(sorted(STRATEGIES))}")
    return strategies


def check_budgets(text: str) -> tuple[int, ...]:
    """The budgets of ``--budgets 128,256``: whole numbers of tokens, 1 to :data:`MAX_BUDGET`.

    Raises:
        ValueError: none given, or one that is not such a number.
    """
    from convlab.systems.names import shown

    budgets = []
    for part in text.split(","):
        if not part.strip():
            continue
        try:
            budget = int(part)
        except ValueError:
            budget = 0
        if not 1 <= budget <= MAX_BUDGET:
            raise ValueError(
                f"--budgets: {shown(part)} is not a whole number from 1 to {MAX_BUDGET:,}"
            )
        budgets.append(budget)
    if not budgets:
        raise ValueError("--budgets: give one or more budgets, comma-separated")
    return tuple(budgets)


def check_policies(text: str) -> tuple[str, ...]:
    """The resurrection policies of ``--resurrection a,b``, in order.

    Raises:
        ValueError: one is not registered, naming it and the valid ones.
    """
    from convlab.resurrection import get_policy

    policies = tuple(p for p in text.split(",") if p)
    for name in policies:
        get_policy(name)  # an unknown policy or a bad parameter: its error says which
    return policies


def comparison_systems(comparison: Comparison) -> list[System]:
    """The systems of ``comparison``: its experiment file's, checked before any work.

    The file is ``comparison.systems`` or :data:`~convlab.systems.file.DEFAULT_EXPERIMENT`; its
    default systems are those of ``comparison.strategies`` (else the file's ``strategies``, else
    the default experiment's).

    Raises:
        ValueError: an experiment file that cannot be read or is not valid (naming the file), a
            ``baseline`` that is none of the systems.
    """
    from convlab.errors import LoadError
    from convlab.systems.file import DEFAULT_EXPERIMENT, read_systems
    from convlab.systems.names import shown

    path = comparison.systems or DEFAULT_EXPERIMENT
    try:
        systems = read_systems(path, strategies=comparison.strategies)
    except OSError as exc:
        raise ValueError(f"cannot read the experiment file {path}: {exc.strerror}") from exc
    except LoadError as exc:  # line 0: the file as a whole (missing, a FIFO, over its limit)
        if exc.line:
            raise
        raise ValueError(f"cannot read the experiment file {path}: {exc.reason}") from exc
    names = [s.name for s in systems]
    baseline = comparison.baseline
    if baseline is not None and baseline not in names:
        listed = ", ".join(shown(n) for n in names[:20]) + (", ..." if len(names) > 20 else "")
        raise ValueError(f"--baseline {shown(baseline)} is not one of the systems: {listed}")
    return systems


def comparison_config(
    data: LabelledData,
    *,
    budgets: tuple[int, ...],
    scope: str | None,
    baseline: str | None,
    protocol: str = "convlab",
) -> EvalConfig:
    """The :class:`EvalConfig` for ``data``: LongMemEval's and pooled judgments' measures added.

    Args:
        data: the labelled data; haystacks make ``haystack`` the default scope, sessions add
            LongMemEval's measures at turn and session level, pooled judgments add
            ``judged@10`` and ``bpref``.
        budgets: resurrection budgets in tokens.
        scope: where queries search; ``None`` picks from the data.
        baseline: the system compared against; ``None`` for the first.
        protocol: how the run is judged (:data:`~convlab.evaluation.config.PROTOCOLS`);
            ``longmemeval`` leaves the assistant's text out of what is embedded (its keys are
            user messages only).
    """
    from convlab.evaluation.config import HEADLINE, JUDGED_METRICS, LONGMEMEVAL_METRICS, EvalConfig
    from convlab.pipeline.policy import ContentPolicy

    scope = scope or ("haystack" if data.haystacks is not None else "conversation")
    metrics: tuple[str, ...] = EvalConfig().metrics
    headline: tuple[str, ...] = HEADLINE
    if data.sessions is not None:  # LongMemEval: its measures, at turn and session level
        metrics = tuple(dict.fromkeys((*metrics, *LONGMEMEVAL_METRICS)))
        headline = (*HEADLINE[:3], "success@5", "session:success@5", "session:ndcg@10")
    if data.judged is not None:  # pooled judgments: how much was judged, and bpref beside
        metrics = (*metrics, *JUDGED_METRICS)
        headline = (*headline, *JUDGED_METRICS)
    return EvalConfig(
        budgets=budgets,
        scope=scope,
        baseline=baseline,
        metrics=metrics,
        headline=headline,
        protocol=protocol,
        policy=ContentPolicy(assistant_text=protocol != "longmemeval"),
    )


def run_comparison(comparison: Comparison, systems: list[System] | None = None) -> ComparisonRun:
    """Run ``comparison``: evaluate its systems on its data and write the run folder.

    Args:
        comparison: what to run.
        systems: those of :func:`comparison_systems`, when the caller has read them already.

    Raises:
        ValueError: an experiment file that is not valid (see :func:`comparison_systems`).
    """
    import matplotlib

    matplotlib.use("Agg")  # figures go to files only, whatever the display

    from convlab.embed import CachedEmbedder, make_embedder, minilm_embedder
    from convlab.evaluation.datasets import check_scorable, load_labelled
    from convlab.evaluation.evaluate import evaluate
    from convlab.evaluation.queries import write_qrels
    from convlab.evaluation.runfolder import save_run

    c = comparison
    systems = systems if systems is not None else comparison_systems(c)
    # the device is resolved here, once: `--device cuda` without a GPU fails before any work
    if c.embedder == "minilm":
        base = minilm_embedder(c.backend, device=c.device)
    else:
        base = make_embedder(c.embedder, c.backend, model_id=c.model_id, device=c.device)
    embedder = CachedEmbedder(base, c.cache)
    data = load_labelled(c.data, protocol=c.protocol)
    data = data.select(list(c.conversations) or None).every(c.every)
    check_scorable(data, c.data or "the sample data")
    config = comparison_config(
        data, budgets=c.budgets, scope=c.scope, baseline=c.baseline, protocol=c.protocol
    )
    config = replace(config, resurrection=c.resurrection)
    if c.text_format is not None:
        config = replace(config, policy=config.policy.with_text_format(c.text_format))
    ev = evaluate(data, systems, embedder=embedder, config=config)
    out = Path(c.out)
    out.mkdir(parents=True, exist_ok=True)
    write_qrels(data.queries, out / "qrels.txt")
    report = save_run(ev, out, command=c.command)
    return ComparisonRun(ev, report, embedder.stats)
