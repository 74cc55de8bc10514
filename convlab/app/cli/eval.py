"""``convlab eval`` and ``python -m eval.run``: the strategy comparison's command line.

The program parses its options into a :class:`~convlab.evaluation.compare.Comparison`
(:func:`comparison_of`), runs it (:func:`~convlab.evaluation.compare.run_comparison`) and prints
the table; the library never sees the command line. :func:`main` is ``python -m eval.run``, with
its own exit codes (0 written, 2 bad options or data); ``convlab eval`` goes through
:mod:`convlab.app.cli.main`'s contract.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from convlab.app.exits import EXIT_OK, EXIT_USAGE, UsageError, is_input_error, one_line
from convlab.defaults import BUDGETS, POLICY

if TYPE_CHECKING:
    from convlab.evaluation.compare import Comparison, ComparisonRun
    from convlab.systems.system import System

NAME = "eval"
EXAMPLE = "convlab eval --data data/sample --out runs/eval"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``eval`` with the comparison's own options to the subcommands ``sub``."""
    ev: argparse.ArgumentParser = sub.add_parser(
        NAME,
        help="run the strategy comparison (the same as python -m eval.run)",
        description="Evaluate every strategy (and the BM25 and hybrid systems) on labelled "
        "data and write a run folder: config.json, metrics.json, per-query parquet files, TREC "
        "runs, report.md and figures. --data is the bundled sample (default), a LoCoMo-family "
        "json or folder, a LongMemEval json, or a folder of pooled judgments.",
    )
    add_arguments(ev)
    return ev


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The comparison's options (``--data``, ``--strategies``, ``--out``, ...) on ``p``."""
    from convlab.embed import BACKENDS, EMBEDDERS, Device
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
    p.add_argument("--strategies", default=None)
    p.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    p.add_argument(
        "--resurrection",
        default=POLICY,
        help="resurrection policies compared at each budget, comma-separated; the first "
        "gives coverage@B, several add the system x policy grid (%(default)s); a policy may "
        "set its parameters: window:n=2, adaptive:short=32:long=128",
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
        "--embedder",
        default="minilm",
        choices=[n for n in EMBEDDERS.names() if n != "hash"],
        help="the embedder: minilm (default), minilm-ft, a fine-tuned MiniLM in the cache "
        "(CONVLAB_CACHE) named by --model-id (python -m eval.finetune_cv --all-model makes it), "
        "or static, MiniLM distilled with Model2Vec (one view: static:VIEW in --systems)",
    )
    p.add_argument("--model-id", default=None, help="the fine-tuned model of --embedder minilm-ft")
    p.add_argument(
        "--device",
        default=Device.AUTO.value,
        choices=[d.value for d in Device],
        help="where the model embeds: 'auto' (a CUDA GPU when torch sees one), 'cpu' or 'cuda' "
        "(refused without a GPU); the cache is shared by all devices (%(default)s)",
    )


_MOST = 2**31 - 1
"""The largest count an option takes (polars and numpy index with 64-bit integers at most)."""


def _positive(text: str) -> int:
    """An argparse type: an integer from 1 to :data:`_MOST`."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= _MOST:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to {_MOST:,}")
    return n


def _compared(comparison: Comparison, systems: list[System]) -> ComparisonRun:
    """Run the comparison; what its data cannot serve is a usage error.

    The library raises ``ValueError`` for a request the data refuses: no such conversation, no
    per-query haystacks.
    """
    from convlab.evaluation.compare import run_comparison

    try:
        return run_comparison(comparison, systems)
    except ValueError as exc:
        raise UsageError(one_line(exc)) from None


def comparison_of(
    args: argparse.Namespace, command: Sequence[str] = ()
) -> tuple[Comparison, list[System]]:
    """The comparison the options describe, and its systems, checked before any work.

    ``command``: the command line the options came from, recorded in the run folder.

    Raises:
        ValueError: bad budgets, unknown strategies or policies, an experiment file that
            cannot be read or is not valid (naming the file), a ``--baseline`` that is none of
            the systems.
    """
    from convlab.evaluation.compare import (
        Comparison,
        check_budgets,
        check_policies,
        check_strategies,
        comparison_systems,
    )

    budgets = check_budgets(args.budgets)
    strategies = check_strategies(args.strategies) if args.strategies is not None else []
    comparison = Comparison(
        data=args.data,
        conversations=tuple(c for c in (args.conversations or "").split(",") if c),
        every=args.every,
        strategies=tuple(strategies),
        budgets=budgets,
        resurrection=check_policies(args.resurrection),
        scope=args.scope,
        systems=args.systems or None,
        text_format=args.text_format,
        protocol=args.protocol,
        baseline=args.baseline,
        out=args.out,
        cache=args.cache,
        backend=args.backend,
        device=args.device,
        embedder=args.embedder,
        model_id=args.model_id,
        command=tuple(command),
    )
    return comparison, comparison_systems(comparison)


def show(made: ComparisonRun) -> None:
    """Print the comparison's table, the embedding counts and where the report is."""
    import polars as pl

    from convlab.systems.names import escaped

    table = made.evaluation.table().with_columns(pl.col("system").map_elements(escaped, pl.String))
    print(table.to_pandas().to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"embedding: {made.embedding}")
    print(f"report: {escaped(made.report)}")


def run(args: argparse.Namespace) -> int:
    """Run the comparison; bad strategies, policies or experiment files are usage errors."""
    try:
        comparison, systems = comparison_of(args, getattr(args, "argv", ()))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    show(_compared(comparison, systems))
    return EXIT_OK


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
    from convlab.systems.names import escaped

    p = argparse.ArgumentParser(prog=prog, description=description or __doc__)
    add_arguments(p)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(argv)
    try:
        comparison, systems = comparison_of(args, [*shlex.split(prog), *argv])
    except ValueError as exc:
        print(f"{prog}: {one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        show(_compared(comparison, systems))
    except Exception as exc:
        if not is_input_error(exc):
            raise
        print(f"{prog}: {escaped(one_line(exc))}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK
