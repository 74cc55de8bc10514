"""``convlab index``: load transcripts, build units, embed what is new, write the store."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from convlab.app.cli.options import add_device, add_store, engine, make_embedder
from convlab.app.display import skip_report, sync_line, with_skip_report
from convlab.app.exits import EXIT_OK, UsageError
from convlab.embed.factory import EMBEDDERS
from convlab.progress import BarProgress, LineProgress, NullProgress, Progress, using

if TYPE_CHECKING:
    from convlab.pipeline.policy import ContentPolicy
    from convlab.protocols import Embedder
    from convlab.store import Store, StoreConfig
    from convlab.store.format import FileRecord

NAME = "index"
EXAMPLE = "convlab index ~/.claude/projects --store ~/.convlab/store"
STORE_BACKEND = "onnx-int8"
"""The backend a new store embeds with: 1.56x torch's texts/s on this 2-core CPU, quiet (284 against
182 texts/s on 1,000 LoCoMo texts, ``python -m eval.bench_onnx``), with Recall@5 within 0.01 of
torch on LoCoMo, the real sessions and a fifth of the LongMemEval oracle (README, "Embedding
backends"); torch stays the reference of ``eval.run``, and embeds a new store where a CUDA GPU
is used (``--device auto`` or ``cuda``): onnx-int8 runs on the CPU only."""
INCLUDES = {"tool-output": "tool_results", "thinking": "thinking"}
"""``--include`` choices: the ``ContentPolicy`` field each one turns on."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``index`` to the subcommands ``sub`` (argparse's ``add_subparsers()`` object)."""
    ix: argparse.ArgumentParser = sub.add_parser(
        NAME,
        help="load transcripts, build units, embed and write the store (incremental)",
        description="Load every supported transcript under PATHs (default: the usual homes of "
        "Claude Code, Codex and Amplifier histories on this machine), build units, embed "
        "only what is new or changed, and write the store atomically.",
    )
    ix.add_argument("paths", nargs="*", type=Path, metavar="PATH")
    add_store(ix)
    _add_held(ix)
    _add_running(ix)
    return ix


def _add_held(ix: argparse.ArgumentParser) -> None:
    """The options of what the store holds: its system, units, index, redaction, content."""
    from convlab.index import INDEX_KINDS
    from convlab.pipeline.policy import TEXT_FORMATS, ContentPolicy
    from convlab.pipeline.redact import REDACT_MODES
    from convlab.store import StoreConfig
    from convlab.strategies import STRATEGIES

    defaults = StoreConfig()  # one source of the defaults: the store's own config
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
        "--unit-tokens",
        dest="max_tokens",
        type=int,
        default=defaults.max_tokens,
        metavar="TOKENS",
        help="a unit's token limit, [CLS] and [SEP] included (%(default)s)",
    )
    for old in ("--max-tokens", "--budget"):  # older names; "budget" is the context budget
        ix.add_argument(
            old, dest="max_tokens", type=int, default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )
    ix.add_argument(
        "--index", dest="index_kind", default=defaults.index.kind, choices=list(INDEX_KINDS)
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
    ix.add_argument(
        "--include",
        action="append",
        choices=tuple(INCLUDES),
        default=[],
        help="also embed tool output (then `search --role tool` finds it) or thinking; "
        "repeatable (default: prompts, replies and tool calls)",
    )


def _add_running(ix: argparse.ArgumentParser) -> None:
    """The options of how an indexing run goes: rebuild, wait, embedder, device, engine, watch."""
    from convlab.embed import BACKENDS
    from convlab.engines import ENGINES

    ix.add_argument("--rebuild", action="store_true", help="start the store from scratch")
    ix.add_argument("--wait", action="store_true", help="wait for another indexer to finish")
    ix.add_argument(
        "--embedder", default="minilm", choices=EMBEDDERS.names(), help=argparse.SUPPRESS
    )
    ix.add_argument(
        "--backend",
        default=None,
        choices=tuple(BACKENDS),
        help=f"MiniLM backend: torch fp32, onnx fp32 or onnx-int8 (default: the store's own; "
        f"for a new store {STORE_BACKEND}, torch without the onnx extra)",
    )
    add_device(ix)
    ix.add_argument(
        "--engine",
        default="local",
        choices=sorted(ENGINES),
        help="where embedding runs: this process, or Ray Data (convlab-memory[ray]) (%(default)s)",
    )
    ix.add_argument(
        "--watch",
        action="store_true",
        help="keep running: poll the PATHs and index again whenever a transcript changes; "
        "the store's searches are kept warm meanwhile (convlab serve)",
    )
    ix.add_argument(
        "--interval",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="seconds between polls with --watch (%(default)s)",
    )
    ix.add_argument("--watch-cycles", type=int, default=None, help=argparse.SUPPRESS)
    ix.add_argument(
        "--address",
        default=None,
        help="a running Ray cluster to join (with --engine ray; default: a local instance)",
    )


def run(args: argparse.Namespace) -> int:
    """Index ``args.paths`` (or the usual history homes) into ``args.store``."""
    from convlab.specs import IndexSpec
    from convlab.store import Store, StoreConfig, default_history_paths
    from convlab.store.owner import check_store

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
            index=IndexSpec(args.index_kind),
            redact=args.redact,
            policy=_policy(args.text_format, args.include),
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.watch_cycles is not None and not args.watch:
        raise UsageError("--watch-cycles is a bound for --watch")
    if args.interval <= 0:
        raise UsageError("--interval must be positive")
    if config.view_embedder is not None:  # static:VIEW: the store's vectors are the view's
        if args.embedder not in ("minilm", config.view_embedder):
            raise UsageError(f"--embedder {args.embedder}: the system's views name another")
        args.embedder = config.view_embedder
    store = Store(args.store)
    check_store(store.directory)  # a folder or marker not a store's: one line, before any other
    args.backend = args.backend or default_backend(
        store, args.embedder, rebuild=args.rebuild, device=args.device
    )
    # On Ray the actors embed, on the device the engine resolves against the cluster; this
    # process's embedder only describes the model to them, so it stays on the CPU here.
    local_device = "cpu" if args.engine == "ray" else args.device
    embedder = make_embedder(args.embedder, args.backend, local_device)
    if args.quiet and hasattr(embedder, "show_progress"):
        embedder.show_progress = False  # the model's progress bar
    _index(args, paths, config, store, embedder)
    if args.watch:
        _watch(args, paths, config, store, embedder)
    return EXIT_OK


def _index(
    args: argparse.Namespace,
    paths: list[Path],
    config: StoreConfig,
    store: Store,
    embedder: Embedder,
    *,
    missing_ok: bool = False,
    synced: bool = False,
) -> None:
    """One ``convlab index`` run: update the store, print its summary (``synced``: one line).

    ``missing_ok``: a path that is gone is a folder emptied, not an error (``--watch``).
    """
    progress = _progress(args.quiet)

    def log(message: str) -> None:
        if args.quiet:
            return
        if isinstance(progress, BarProgress):  # above the bar, not through it
            progress.write(f"convlab index: {message}")
        else:
            print(f"convlab index: {message}", file=sys.stderr, flush=True)

    log(f"indexing {len(paths)} path{'s' * (len(paths) != 1)} into {store.directory}")
    eng = engine(args.engine, args.address, args.device)
    try:
        with using(progress):
            progress.phase("load")
            summary = store.update(
                paths,
                config=config,
                embedder=embedder,
                rebuild=args.rebuild,
                wait=args.wait,
                progress=False if args.quiet else None,
                log=log,
                engine=eng,
                missing_ok=missing_ok,
            )
    finally:
        eng.close()
    if synced:  # a sync of --watch: one line each
        print(sync_line(summary, time.strftime("%Y-%m-%d %H:%M:%S")), flush=True)
        return
    report = skip_report(summary.skipped, verbose=args.verbose)
    for line in with_skip_report(summary.lines(), report):
        print(line)
    if not (summary.conversations_added or summary.conversations_changed):
        empty = nothing_readable(store.manifest().files, paths, summary.skipped)
        if empty is not None:
            raise UsageError(empty)
    if args.embedder == "minilm" and args.backend == "torch":
        _export_for_search()
    print(f"store: {store.directory}", flush=True)


def _watch(
    args: argparse.Namespace,
    paths: list[Path],
    config: StoreConfig,
    store: Store,
    embedder: Embedder,
) -> None:
    """Poll the sources every ``args.interval`` seconds; index again when a file changed.

    Each poll is :func:`sync`, which prints one line per sync (:func:`sync_line`);
    ``--watch-cycles`` bounds the polls (tests), else it runs until interrupted.
    """
    from convlab.app.cli.serve import start_background

    again = argparse.Namespace(**{**vars(args), "wait": True})  # behind a hook's index, say
    if not args.quiet:
        print(f"watching every {args.interval:g} s; a line per sync (Ctrl-C stops)", flush=True)
    seen = sources_signature(paths)
    polls = 0
    warm = start_background(store.directory, owner=os.getpid())  # searches answer at once
    try:
        while args.watch_cycles is None or polls < args.watch_cycles:
            _sleep(args.interval)
            polls += 1
            seen = sync(again, paths, config, store, embedder, seen)
    finally:
        if warm is not None:
            warm.terminate()


def sync(
    args: argparse.Namespace,
    paths: list[Path],
    config: StoreConfig,
    store: Store,
    embedder: Embedder,
    seen: frozenset[tuple[str, int, int]],
) -> frozenset[tuple[str, int, int]]:
    """One poll of ``--watch``: a whole ``convlab index`` when the files under ``paths`` changed.

    Returns the :func:`sources_signature` seen. Each run is as crash-safe as ``convlab index``,
    waiting for the store's lock when ``args.wait``. A path deleted (and made again later) or a
    poll that finds nothing readable is said on stderr and the watch goes on: the conversations
    read before stay in the store, detached, until their files come back.
    """
    now = sources_signature(paths)
    if now == seen:
        return seen
    for path in paths:
        if not path.expanduser().exists():
            _say(args, f"{path} is gone; its conversations stay in the store, detached")
    try:
        quiet = argparse.Namespace(**{**vars(args), "quiet": True})  # its line only
        _index(quiet, paths, config, store, embedder, missing_ok=True, synced=True)
    except UsageError as exc:  # nothing readable under the paths now: wait for more
        _say(args, str(exc))
    return now


def _say(args: argparse.Namespace, message: str) -> None:
    """One line on stderr (none under ``-q``)."""
    if not args.quiet:
        print(f"convlab index: {message}", file=sys.stderr, flush=True)


_sleep = time.sleep  # the wait between polls (a test steps through it)


def sources_signature(paths: Sequence[Path]) -> frozenset[tuple[str, int, int]]:
    """(path, size, mtime) of every regular file under ``paths``: what a change changes."""
    from convlab.files import walk

    out = set()
    for root in paths:
        for found in walk(root.expanduser()):
            if found.problem is None:
                with contextlib.suppress(OSError):  # gone since the walk: a change next time
                    st = found.path.stat()
                    out.add((str(found.path), st.st_size, st.st_mtime_ns))
    return frozenset(out)


def _progress(quiet: bool) -> Progress:
    """The run's one display: nothing under ``-q``; a bar on a terminal; else a line a phase."""
    if quiet:
        return NullProgress()
    if sys.stderr.isatty():
        return BarProgress(sys.stderr)
    return LineProgress(lambda m: print(f"convlab index: {m}", file=sys.stderr, flush=True))


def nothing_readable(
    files: Mapping[str, FileRecord],
    paths: Sequence[Path],
    skipped: Sequence[tuple[str, int, str]],
) -> str | None:
    """Why no transcript under ``paths`` was read, or ``None`` when one was.

    ``files`` is the store manifest's record of the files indexed (path -> record with its
    ``conversations``); ``skipped`` what this update skipped, counted by reason in the answer.
    The files under ``paths`` are walked again (``stat`` only) to tell which records are theirs.
    """
    from convlab.files import walk

    walked = {os.path.abspath(f.path) for p in paths for f in walk(p.expanduser()) if not f.problem}
    under = {name: rec for name, rec in files.items() if name in walked}
    if any(rec.conversations for rec in under.values()):
        return None
    reasons = Counter(reason for _, _, reason in skipped)
    why = [f"{n} x {reason}" for reason, n in reasons.most_common()]
    told = {path for path, _, _ in skipped}
    before = [name for name in under if name not in told]  # unchanged since an earlier index
    if before:
        why.append(f"{len(before)} x indexed before, holding no conversation")
    return (
        f"no readable transcript found under {', '.join(str(p) for p in paths)}: "
        + ("; ".join(why) if why else "no files there")
        + " (--verbose lists each skipped file)"
    )


def _policy(text_format: str, include: list[str]) -> ContentPolicy:
    """The store's content policy: ``--text-format`` and what ``--include`` adds."""
    from convlab.pipeline.policy import ContentPolicy

    on = {INCLUDES[name] for name in include}
    return ContentPolicy(
        text_format=text_format, tool_results="tool_results" in on, thinking="thinking" in on
    )


def default_backend(
    store: Store, embedder: str, *, rebuild: bool = False, device: str = "auto"
) -> str:
    """The backend ``index`` embeds with when ``--backend`` is not given.

    The store's own (its vectors' ``model_id`` names it), so an update never mixes two; for a new
    store (or ``--rebuild``) torch when ``device`` is ``cuda``, or ``auto`` and torch sees a GPU
    (onnx-int8 runs on the CPU only), else :data:`STORE_BACKEND`, or torch, said on stderr, when
    the ``onnx`` extra is missing. Embedders other than MiniLM have no backend: torch, which they
    ignore.
    """
    import importlib.util

    from convlab.embed import backend_of
    from convlab.embed.device import torch_cuda_available

    if embedder != "minilm":
        return "torch"
    if not rebuild:
        from convlab.store import StoreDamaged

        try:
            return backend_of(store.manifest().model_id)
        except (FileNotFoundError, StoreDamaged, ValueError):
            pass  # no store yet, one to repair, or vectors of another embedder: default below
    if device == "cuda" or (device == "auto" and torch_cuda_available()):
        return "torch"
    if all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxruntime")):
        return STORE_BACKEND
    print(
        f"convlab index: {STORE_BACKEND} needs convlab-memory[onnx]; embedding with torch",
        file=sys.stderr,
    )
    return "torch"


def _export_for_search() -> None:
    """Export the fp32 ONNX model now, so that `search` can embed queries without torch."""
    import importlib.util

    if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None:
        return  # without the onnx extra, search embeds queries with torch
    from convlab.embed.onnx import ensure_onnx_model

    ensure_onnx_model(quantized=False)
