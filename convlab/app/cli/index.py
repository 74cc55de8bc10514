"""``convlab index``: load transcripts, build units, embed what is new, write the store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from convlab.app.cli.options import add_store, engine, make_embedder
from convlab.app.display import skip_report, with_skip_report
from convlab.app.exits import EXIT_OK, UsageError
from convlab.embed.factory import EMBEDDERS

NAME = "index"
EXAMPLE = "convlab index ~/.claude/projects --store ~/.convlab/store"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``index`` to the subcommands ``sub`` (argparse's ``add_subparsers()`` object)."""
    from convlab.embed import BACKENDS
    from convlab.engines import ENGINES
    from convlab.index import INDEX_KINDS
    from convlab.pipeline.policy import TEXT_FORMATS, ContentPolicy
    from convlab.pipeline.redact import REDACT_MODES
    from convlab.store import StoreConfig
    from convlab.strategies import STRATEGIES

    defaults = StoreConfig()  # one source of the defaults: the store's own config
    ix: argparse.ArgumentParser = sub.add_parser(
        NAME,
        help="load transcripts, build units, embed and write the store (incremental)",
        description="Load every supported transcript under PATHs (default: the usual homes of "
        "Claude Code, Codex and Amplifier histories on this machine), build units, embed "
        "only what is new or changed, and write the store atomically.",
    )
    ix.add_argument("paths", nargs="*", type=Path, metavar="PATH")
    add_store(ix)
    held = ix.add_mutually_exclusive_group()
    held.add_argument(
        "--system",
        default=None,
        metavar="NAME|FILE",
        help="the system the store is searched with, whose views it holds: 'default' (the "
        "fusion chosen by cross-validation, convlab/systems/default.toml), a view searched "
        "alone (turn_pair, bm25:message, hybrid:sequential) or an experiment file "
        "(FILE or FILE#NAME) (default)",
    )
    held.add_argument(
        "--strategy",
        default=None,
        choices=sorted(STRATEGIES),
        help="one strategy, searched densely (the same as --system STRATEGY)",
    )
    ix.add_argument(
        "--max-tokens",
        "--budget",  # deprecated alias: "budget" is the resurrection budget of `show`
        dest="max_tokens",
        type=int,
        default=defaults.max_tokens,
        help="a unit's token limit (%(default)s)",
    )
    ix.add_argument(
        "--index", dest="index_kind", default=defaults.index_kind, choices=list(INDEX_KINDS)
    )
    ix.add_argument(
        "--redact",
        default=defaults.redact,
        choices=tuple(REDACT_MODES),
        help="replace secret-shaped strings (keys, tokens, private keys, passwords) before "
        "embedding or storing: 'all' covers prompts, replies, thinking, tool calls and outputs "
        "and titles; 'tool-output' only tool calls and outputs; 'none' nothing (%(default)s)",
    )
    ix.add_argument(
        "--text-format",
        default=ContentPolicy().text_format,
        choices=TEXT_FORMATS.names(),
        help="how a dialog message's text is embedded: 'plain', 'speaker' (Ann: text), 'date' "
        "((1:56 pm on 8 May, 2023) Ann: text) or 'locomo' ((date) Ann said, \"text\"); "
        "chats are never prefixed (%(default)s)",
    )
    ix.add_argument("--rebuild", action="store_true", help="start the store from scratch")
    ix.add_argument("--wait", action="store_true", help="wait for another indexer to finish")
    ix.add_argument(
        "--embedder", default="minilm", choices=EMBEDDERS.names(), help=argparse.SUPPRESS
    )
    ix.add_argument(
        "--backend",
        default="torch",
        choices=tuple(BACKENDS),
        help="MiniLM backend: torch fp32, onnx fp32 or onnx-int8 (%(default)s)",
    )
    ix.add_argument(
        "--engine",
        default="local",
        choices=sorted(ENGINES),
        help="where embedding runs: this process, or Ray Data (convlab[ray]) (%(default)s)",
    )
    ix.add_argument(
        "--address",
        default=None,
        help="a running Ray cluster to join (with --engine ray; default: a local instance)",
    )
    return ix


def run(args: argparse.Namespace) -> int:
    """Index ``args.paths`` (or the usual history homes) into ``args.store``."""
    from convlab.pipeline.policy import ContentPolicy
    from convlab.store import Store, StoreConfig, default_history_paths

    paths = list(args.paths) or default_history_paths()
    if not paths:
        raise UsageError(
            "no PATH given and no Claude Code, Codex or Amplifier history found in the usual places"
        )
    for path in paths:
        if not path.expanduser().exists():
            raise UsageError(f"no such file or directory: {path}")
    try:
        config = StoreConfig(
            system=args.strategy or args.system or "default",
            max_tokens=args.max_tokens,
            index_kind=args.index_kind,
            redact=args.redact,
            # only a changed field is written, so stores built before --text-format still match
            policy={}
            if args.text_format == ContentPolicy().text_format
            else {"text_format": args.text_format},
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    store = Store(args.store)

    def log(message: str) -> None:
        if not args.quiet:
            print(f"convlab index: {message}", file=sys.stderr, flush=True)

    log(f"indexing {len(paths)} path{'s' * (len(paths) != 1)} into {store.directory}")
    embedder = make_embedder(args.embedder, args.backend)
    eng = engine(args.engine, args.address)
    if args.quiet and hasattr(embedder, "show_progress"):
        embedder.show_progress = False  # the model's progress bar
    try:
        summary = store.update(
            paths,
            config=config,
            embedder=embedder,
            rebuild=args.rebuild,
            wait=args.wait,
            progress=False if args.quiet else None,
            log=log,
            engine=eng,
        )
    finally:
        eng.close()
    report = skip_report(summary.skipped, verbose=args.verbose)
    for line in with_skip_report(summary.lines(), report):
        print(line)
    if args.embedder == "minilm" and args.backend == "torch":
        _export_for_search()
    print(f"store: {store.directory}")
    return EXIT_OK


def _export_for_search() -> None:
    """Export the fp32 ONNX model now, so that `search` can embed queries without torch."""
    import importlib.util

    if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None:
        return  # without the onnx extra, search embeds queries with torch
    from convlab.embed.onnx import ensure_onnx_model

    ensure_onnx_model(quantized=False)
