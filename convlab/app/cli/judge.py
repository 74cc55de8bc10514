"""``convlab judge``: pooled relevance judgments (:mod:`convlab.judge`), and their agreement."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from convlab.app.cli.options import make_embedder
from convlab.app.exits import EXIT_OK, UsageError
from convlab.embed.factory import EMBEDDERS
from convlab.errors import LoadError

if TYPE_CHECKING:
    from convlab.evaluation.datasets import LabelledData

NAME = "judge"
EXAMPLE = None
DEFAULT_JUDGE_SYSTEMS = "message,turn_pair,whole_turn,bm25:message,hybrid:message"
DOC_KINDS = ("turn", "message")
"""What a judged doc is: a turn, or (as in dialogs) one message."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``judge`` to the subcommands ``sub``."""
    ju: argparse.ArgumentParser = sub.add_parser(
        NAME,
        help="judge pooled candidates for a queries file, or: judge agreement A B",
        description="Pool the top docs of several systems for each query of QUERIES (JSONL: "
        "query_id, text, optional conversation_id), shuffled, and ask for a judgment of each: "
        "r/1 relevant, p/2 partly, n/3 not, s/0 skip, q quit. Each judgment is appended to "
        "--qrels at once; running again resumes. `convlab judge agreement A B` prints Cohen's "
        "kappa of two qrels files.",
    )
    ju.add_argument("target", nargs="+", metavar="QUERIES | agreement A B")
    ju.add_argument("--data", type=Path, help="transcripts (a file or folder) or a labelled folder")
    ju.add_argument("--systems", default=DEFAULT_JUDGE_SYSTEMS, help="(%(default)s)")
    ju.add_argument("--depth", type=int, default=10, help="pool depth per system (%(default)s)")
    ju.add_argument("--seed", type=int, default=0, help="shuffling seed (%(default)s)")
    ju.add_argument("--docs", default="turn", choices=DOC_KINDS, help="(%(default)s)")
    ju.add_argument("--qrels", type=Path, help="the qrels JSONL file judgments are appended to")
    ju.add_argument("--assessor", help="your name, recorded with each judgment")
    ju.add_argument("--cache", default="runs/cache", help="embedding cache (%(default)s)")
    ju.add_argument(
        "--embedder", default="minilm", choices=EMBEDDERS.names(), help=argparse.SUPPRESS
    )
    return ju


def run(args: argparse.Namespace) -> int:
    """Judge the pooled candidates of a queries file, or print the agreement of two qrels."""
    from convlab import judge

    if args.target[0] == "agreement":
        if len(args.target) != 3:
            raise UsageError("usage: convlab judge agreement QRELS_A QRELS_B")
        try:
            a = judge.agreement(Path(args.target[1]), Path(args.target[2]))
        except LoadError:
            raise
        except ValueError as exc:  # nothing graded in common
            raise UsageError(f"{args.target[1]} and {args.target[2]}: {exc}") from None
        print(
            f"Cohen's kappa {a.kappa:.3f} on {a.overlap} docs graded by both "
            f"(same grade on {a.observed:.1%})"
        )
        return EXIT_OK
    if len(args.target) != 1:
        raise UsageError("give one queries file (or: agreement A B)")
    missing = [f"--{n}" for n in ("data", "qrels", "assessor") if getattr(args, n) is None]
    if missing:
        raise UsageError(f"judging needs {', '.join(missing)}")
    try:  # a bad log fails before any work
        log = judge.JudgmentLog(args.qrels, assessor=args.assessor)
    except LoadError:
        raise
    except ValueError as exc:  # a blank assessor
        raise UsageError(str(exc)) from None
    data = _judge_data(Path(args.target[0]), args.data, args.docs)
    systems = judge.systems_from_names([s for s in args.systems.split(",") if s])
    from convlab.embed import CachedEmbedder

    embedder = CachedEmbedder(make_embedder(args.embedder), args.cache)
    pool = judge.build_pool(
        data, systems, embedder=embedder, depth=args.depth, seed=args.seed, scope="conversation"
    )
    if log.torn is not None:
        print(f"note: the last line of {args.qrels} was torn and was cut off", file=sys.stderr)
    judge.judge_loop(pool, log, color=sys.stdout.isatty())
    if log.conflicts:
        print(
            f"note: {len(log.conflicts)} of your grades replace different ones another session "
            f"of {args.assessor} recorded meanwhile (the last judgment counts)",
            file=sys.stderr,
        )
    return EXIT_OK


def _judge_data(queries: Path, data: Path, docs: str) -> LabelledData:
    """Unlabelled queries over transcripts (or a labelled folder's corpus)."""
    from convlab.evaluation.datasets import LabelledData, load_labelled
    from convlab.evaluation.queries import read_queries
    from convlab.loaders import load

    if data.is_dir() and ((data / "sources.json").is_file() or (data / "queries.jsonl").is_file()):
        corpus = load_labelled(data).corpus
    else:
        corpus = load(data)
    if corpus.conversations.height == 0:  # a FIFO, a device, an empty folder: nothing to pool
        skipped = corpus.report.skipped
        why = f" ({skipped['reason'][0]})" if skipped.height else ""
        raise UsageError(f"--data {data}: no conversation to judge{why}")
    if docs == "message":
        corpus = corpus.with_doc_kind("message")
    return LabelledData(queries.stem, corpus, read_queries(queries))
