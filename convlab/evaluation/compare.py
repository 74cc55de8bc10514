"""The strategy comparison: labelled data in, a run folder out.

``python -m eval.run`` and ``convlab eval`` are this module's command line (:func:`main`,
:func:`add_arguments`): load the labelled data (:func:`~convlab.evaluation.datasets.load_labelled`),
evaluate one dense system per strategy plus the lexical and hybrid ones
(:func:`~convlab.evaluation.evaluate.default_systems`), and write a run folder
(:func:`~convlab.evaluation.runfolder.save_run`) with ``qrels.txt`` beside it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from convlab.evaluation.config import EvalConfig
    from convlab.evaluation.datasets import LabelledData
    from convlab.systems.system import System

__all__ = [
    "DEFAULT_BUDGETS",
    "DEFAULT_STRATEGIES",
    "add_arguments",
    "check_budgets",
    "check_policies",
    "check_strategies",
    "comparison_config",
    "main",
    "named_systems",
    "run_comparison",
    "systems_of",
]

DEFAULT_STRATEGIES = "isolated,message,turn_pair,sequential,whole_turn,qa_pair"
DEFAULT_BUDGETS = "128,256,512,1024,2048"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The comparison's options (``--data``, ``--strategies``, ``--out``, ...) on ``p``."""
    from convlab.embed import BACKENDS, Device
    from convlab.evaluation.config import PROTOCOLS, SCOPES
    from convlab.pipeline.policy import TEXT_FORMATS

    p.add_argument(
        "--data",
        default=None,
        help="data/sample (default), a LoCoMo-family json or folder, or a LongMemEval json",
    )
    p.add_argument("--conversations", default=None, help="comma-separated conversation ids")
    p.add_argument(
        "--every",
        type=_positive,
        default=1,
        metavar="N",
        help="every N-th query only (the 1st, the N+1-th, ...) and the conversations it searches: "
        "a fixed subset for a costly run (%(default)s: all)",
    )
    p.add_argument("--strategies", default=DEFAULT_STRATEGIES)
    p.add_argument("--budgets", default=DEFAULT_BUDGETS)
    p.add_argument(
        "--resurrection",
        default="unit",
        help="resurrection policies compared at each budget, comma-separated; the first "
        "gives coverage@B, several add the system x policy grid (%(default)s)",
    )
    p.add_argument(
        "--scope",
        default=None,
        choices=tuple(SCOPES),
        help="where queries search (default: haystack if the data has them, else conversation)",
    )
    p.add_argument(
        "--systems",
        default=None,
        metavar="FILE",
        help="an experiment file (TOML) of the systems to compare; default: the default "
        "systems of --strategies (a file can include them with defaults = true)",
    )
    p.add_argument(
        "--text-format",
        default=None,
        choices=TEXT_FORMATS.names(),
        help="how dialog messages are written before chunking, for every system without its "
        "own (default: ContentPolicy's, speaker)",
    )
    p.add_argument(
        "--protocol",
        default="convlab",
        choices=tuple(PROTOCOLS),
        help="how retrieval is judged: convlab (its own: the data's docs and labels, convlab's "
        "measures; default) or longmemeval (LongMemEval's official protocol, on a LongMemEval "
        "file only: user messages as keys, official gold, recall_any/recall_all/ndcg_any, "
        "strict and non-abstention averages, beside the official flat BM25)",
    )
    p.add_argument("--baseline", default=None, help="system compared against (first strategy)")
    p.add_argument("--out", default="runs/eval")
    p.add_argument("--cache", default="runs/cache", help="embedding cache folder")
    p.add_argument(
        "--backend", default="torch", choices=tuple(BACKENDS), help="MiniLM backend (%(default)s)"
    )
    p.add_argument(
        "--device",
        default=Device.AUTO.value,
        choices=[d.value for d in Device],
        help="where the model embeds: 'auto' (a CUDA GPU when torch sees one), 'cpu' or 'cuda' "
        "(refused without a GPU); the cache is shared by all devices (%(default)s)",
    )


def _positive(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return n


def check_strategies(text: str) -> list[str]:
    """The strategies of ``--strategies a,b,c``, in order.

    Raises:
        ValueError: some are not registered, naming them and the valid ones.
    """
    from convlab.strategies import STRATEGIES

    strategies = [s for s in text.split(",") if s]
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown or not strategies:
        raise ValueError(f"unknown strategies {unknown}; valid: {', '.join(sorted(STRATEGIES))}")
    return strategies


MAX_BUDGET = 1_000_000
"""The largest resurrection budget, in tokens."""


def check_budgets(text: str) -> tuple[int, ...]:
    """The budgets of ``--budgets 128,256``: whole numbers of tokens, 1 to :data:`MAX_BUDGET`.

    Raises:
        ValueError: none given, or one that is not such a number.
    """
    from convlab.evaluation.names import shown

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
    from convlab.resurrection import POLICIES

    policies = tuple(p for p in text.split(",") if p)
    for name in policies:
        POLICIES.get(name)  # an unknown policy: its error lists the valid ones
    return policies


def systems_of(args: argparse.Namespace) -> list[System]:
    """The systems the options name, checked with every other option before any work.

    ``--systems FILE`` or the defaults of ``--strategies`` (:func:`named_systems`); also checks
    ``--resurrection``, ``--budgets`` and that ``--baseline`` is one of the systems.

    Raises:
        ValueError: unknown strategies or policies, bad budgets, an experiment file that cannot
            be read or is not valid (naming the file), a ``--baseline`` that is none of the
            systems.
    """
    from convlab.evaluation.names import shown

    check_budgets(args.budgets)
    systems = named_systems(args)
    names = [s.name for s in systems]
    if args.baseline is not None and args.baseline not in names:
        listed = ", ".join(shown(n) for n in names[:20]) + (", ..." if len(names) > 20 else "")
        raise ValueError(f"--baseline {shown(args.baseline)} is not one of the systems: {listed}")
    return systems


def named_systems(args: argparse.Namespace) -> list[System]:
    """The systems the options name: ``--systems FILE``, or the defaults of ``--strategies``.

    Also checks ``--resurrection``, so that every bad option fails before any work.

    Raises:
        ValueError: unknown strategies or policies, an experiment file that cannot be read or
            is not valid (naming the file).
    """
    from convlab.systems.file import read_systems
    from convlab.systems.system import default_systems

    strategies = check_strategies(args.strategies)
    check_policies(args.resurrection)
    if not args.systems:
        return default_systems(strategies)
    from convlab.errors import LoadError

    try:
        return read_systems(args.systems, strategies=strategies)
    except OSError as exc:
        raise ValueError(f"cannot read the experiment file {args.systems}: {exc.strerror}") from exc
    except LoadError as exc:  # line 0: the file as a whole (missing, a FIFO, over its limit)
        if exc.line:
            raise
        raise ValueError(f"cannot read the experiment file {args.systems}: {exc.reason}") from exc


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


def run_comparison(args: argparse.Namespace, systems: list[System] | None = None) -> Path:
    """Run the comparison the options of :func:`add_arguments` describe; print the table.

    ``systems``: those of :func:`systems_of`, when the caller has read them already.

    Returns:
        The run folder's ``report.md``.

    Raises:
        ValueError: unknown strategies (see :func:`check_strategies`).
    """
    import matplotlib

    matplotlib.use("Agg")  # figures go to files only, whatever the display

    import polars as pl

    from convlab.embed import CachedEmbedder, minilm_embedder
    from convlab.evaluation.datasets import check_scorable, load_labelled
    from convlab.evaluation.evaluate import evaluate
    from convlab.evaluation.names import escaped
    from convlab.evaluation.queries import write_qrels
    from convlab.evaluation.runfolder import save_run

    systems = systems if systems is not None else systems_of(args)
    # the device is resolved here, once: `--device cuda` without a GPU fails before any work
    embedder = CachedEmbedder(minilm_embedder(args.backend, device=args.device), args.cache)
    protocol = getattr(args, "protocol", "convlab")
    data = load_labelled(args.data, protocol=protocol)
    convs = [c for c in (args.conversations or "").split(",") if c]
    data = data.select(convs or None).every(args.every)
    check_scorable(data, args.data or "the sample data")
    budgets = check_budgets(args.budgets)
    config = comparison_config(
        data, budgets=budgets, scope=args.scope, baseline=args.baseline, protocol=protocol
    )
    config = replace(config, resurrection=check_policies(args.resurrection))
    if args.text_format is not None:
        config = replace(config, policy=config.policy.with_text_format(args.text_format))
    ev = evaluate(data, systems, embedder=embedder, config=config)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_qrels(data.queries, out / "qrels.txt")
    report = save_run(ev, out)
    table = ev.table().with_columns(pl.col("system").map_elements(escaped, pl.String))
    print(table.to_pandas().to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"embedding: {embedder.stats}")
    print(f"report: {escaped(report)}")
    return report


def main(
    argv: Sequence[str] | None = None,
    *,
    prog: str = "python -m eval.run",
    description: str | None = None,
) -> int:
    """The comparison as a program: 0 when the run folder is written, 2 for bad options or data.

    Bad options are unknown strategies or policies and an experiment file that is not valid;
    bad data is what :func:`convlab.app.exits.is_input_error` calls so (a labelled file that
    cannot be loaded). Either is one line on stderr, ``PROG: ...``; a bug still raises.

    Args:
        argv: the options of :func:`add_arguments` (default: ``sys.argv[1:]``).
        prog: the program name in usage lines.
        description: the ``--help`` text (default: this module's).
    """
    from convlab.app.exits import EXIT_OK, EXIT_USAGE, is_input_error, one_line
    from convlab.evaluation.names import escaped

    p = argparse.ArgumentParser(prog=prog, description=description or __doc__)
    add_arguments(p)
    args = p.parse_args(argv)
    try:
        systems = systems_of(args)
    except ValueError as exc:
        print(f"{prog}: {one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        run_comparison(args, systems)
    except Exception as exc:
        if not is_input_error(exc):
            raise
        print(f"{prog}: {escaped(one_line(exc))}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK
