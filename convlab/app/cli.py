"""The ``convlab`` command: index real histories, search them, show a turn, stats, eval.

Exit codes, the same for every subcommand:

- 0: success;
- 1: no results (``search`` found nothing that matches);
- 2: a usage, input or data error: a bad option, a missing or damaged store, a store locked by
  another indexer, an unreadable transcript, a bad date. One line on stderr, ``convlab CMD: ...``;
- 3: an internal error (a bug): one line on stderr naming the file the full traceback was written
  to (``$XDG_CACHE_HOME/convlab/crash-*.txt``, else the system temp dir); ``--debug`` prints the
  traceback instead;
- 130: interrupted (Ctrl-C); 141: the reader of stdout went away (``convlab search ... | head -1``),
  the code a shell reports for a program stopped by SIGPIPE; nothing is printed.

Examples::

    convlab index ~/.claude/projects --store ~/.convlab/store
    convlab search "when did we fix the double fetch" --store ~/.convlab/store -k 5
    convlab search "nginx websockets" --since 2026-01-01 --role user --json
    convlab show SESSION_ID --turn 3 --budget 512 --store ~/.convlab/store
    convlab stats --store ~/.convlab/store
    convlab judge queries.jsonl --data ~/.claude/projects --qrels qrels.jsonl --assessor ana
    convlab judge agreement qrels-ana.jsonl qrels-bo.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import traceback
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from convlab.app.display import (
    clip,
    describe_hits,
    hit_lines,
    printable,
    short_path,
    skip_report,
    terminal_width,
    with_skip_report,
    wrapped,
)
from convlab.app.exits import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NO_RESULTS,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    is_input_error,
    one_line,
    write_crash_report,
)

if TYPE_CHECKING:
    from convlab.retrieval import SearchOptions

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_NO_RESULTS",
    "EXIT_OK",
    "EXIT_USAGE",
    "UsageError",
    "main",
]

DEFAULT_STORE = Path("~/.convlab/store")
EXAMPLES = {
    "index": "convlab index ~/.claude/projects --store ~/.convlab/store",
    "search": 'convlab search "nginx websockets" --since 2026-01-01 --role user -k 5',
    "show": "convlab show 3f2a9c1e-SESSION --turn 3 --budget 512",
    "stats": "convlab stats --store ~/.convlab/store",
    "eval": "convlab eval --data data/sample --out runs/eval",
}


def _embedder(name: str, backend: str | None = "torch", model_id: str | None = None) -> Any:
    """The embedder of ``--embedder``/``--backend``; for a search, one fit for ``model_id``."""
    from convlab.embed import make_embedder

    try:
        return make_embedder(name, backend, model_id=model_id)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _add_common(p: argparse.ArgumentParser, *, top: bool) -> None:
    """``--quiet``, ``--verbose``, ``--debug``: accepted before or after the subcommand."""
    default: Any = False if top else argparse.SUPPRESS  # a subcommand keeps the top's value
    p.add_argument("-q", "--quiet", action="store_true", default=default, help="no progress")
    p.add_argument(
        "-v", "--verbose", action="store_true", default=default, help="list every skipped file"
    )
    p.add_argument(
        "--debug", action="store_true", default=default, help="print tracebacks of internal errors"
    )


def _parser() -> argparse.ArgumentParser:
    from convlab import __version__, schema
    from convlab.embed import BACKENDS
    from convlab.engines import ENGINES
    from convlab.index import INDEX_KINDS
    from convlab.store import REDACT_CHOICES, StoreConfig
    from convlab.strategies import STRATEGIES

    p = argparse.ArgumentParser(
        prog="convlab",
        description="Index coding-agent and chat histories, search them, measure retrieval.",
        epilog="exit codes: 0 success, 1 no results, 2 usage/input/data error, 3 internal error, "
        "130 interrupted",
    )
    p.add_argument("--version", action="version", version=f"convlab {__version__}")
    _add_common(p, top=True)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def store_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--store", type=Path, default=DEFAULT_STORE, help="store directory (%(default)s)"
        )

    ix = sub.add_parser(
        "index",
        help="load transcripts, build units, embed and write the store (incremental)",
        description="Load every supported transcript under PATHs (default: the usual homes of "
        "Claude Code, Codex and Amplifier histories on this machine), build units, embed "
        "only what is new or changed, and write the store atomically.",
    )
    ix.add_argument("paths", nargs="*", type=Path, metavar="PATH")
    store_arg(ix)
    ix.add_argument(
        "--strategy", default="turn_pair", choices=sorted(STRATEGIES), help="(%(default)s)"
    )
    ix.add_argument(
        "--max-tokens",
        "--budget",  # deprecated alias: "budget" is the resurrection budget of `show`
        dest="max_tokens",
        type=int,
        default=256,
        help="a unit's token limit (%(default)s)",
    )
    ix.add_argument("--index", dest="index_kind", default="flat", choices=list(INDEX_KINDS))
    ix.add_argument(
        "--redact",
        default=StoreConfig().redact,
        choices=REDACT_CHOICES,
        help="replace secret-shaped strings (keys, tokens, private keys, passwords) before "
        "embedding or storing: 'all' covers prompts, replies, thinking, tool calls and outputs "
        "and titles; 'tool-output' only tool calls and outputs; 'none' nothing (%(default)s)",
    )
    ix.add_argument("--rebuild", action="store_true", help="start the store from scratch")
    ix.add_argument("--wait", action="store_true", help="wait for another indexer to finish")
    ix.add_argument(
        "--embedder", default="minilm", choices=["minilm", "hash"], help=argparse.SUPPRESS
    )
    ix.add_argument(
        "--backend",
        default="torch",
        choices=BACKENDS,
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

    se = sub.add_parser(
        "search",
        help="search a store",
        description="Search a store; the best unit per turn (per message in dialogs), best first.",
    )
    se.add_argument("query")
    store_arg(se)
    se.add_argument("-k", type=int, default=10, help="results (%(default)s)")
    mode = se.add_mutually_exclusive_group()
    mode.add_argument("--hybrid", action="store_true", help="fuse dense and BM25 ranks (RRF)")
    mode.add_argument("--lexical", action="store_true", help="BM25 alone, no vectors")
    se.add_argument("--conversation", help="only this conversation id")
    se.add_argument("--role", action="append", choices=schema.ROLES, help="only hits of ROLE")
    se.add_argument("--since", help="only hits on or after this date (2026-01-31 or ISO time)")
    se.add_argument("--until", help="only hits on or before this date (the whole day counts)")
    se.add_argument("--recency", action="store_true", help="boost recent hits")
    se.add_argument("--density", action="store_true", help="boost conversations with many hits")
    se.add_argument(
        "--mmr",
        type=float,
        nargs="?",
        const=0.7,
        default=None,
        metavar="LAMBDA",
        help="diversify results by MMR (lambda %(const)s when given alone)",
    )
    se.add_argument("--json", action="store_true", help="JSON lines for scripts and agents")
    se.add_argument("--embedder", default=None, choices=["minilm", "hash"], help=argparse.SUPPRESS)
    se.add_argument(
        "--backend",
        default=None,
        choices=BACKENDS,
        help="query backend (default: the store's; onnx for a torch store when exported)",
    )

    sh = sub.add_parser(
        "show", help="print a turn with its resurrected context", description="Print a turn."
    )
    sh.add_argument("conversation")
    store_arg(sh)
    sh.add_argument("--turn", type=int, default=None, help="turn index (default: all turns)")
    sh.add_argument("--budget", type=int, default=None, help="resurrection budget in tokens")

    st = sub.add_parser(
        "stats",
        help="what a store holds",
        description="What a store holds, when it was updated, its size; --verify checks every "
        "file's SHA-256 (exit 2 naming a damaged file).",
    )
    store_arg(st)
    st.add_argument("--json", action="store_true")
    st.add_argument(
        "--verify", action="store_true", help="check the content hash of every file of the store"
    )

    ev = sub.add_parser(
        "eval",
        help="run the strategy comparison (see python -m eval.run --help)",
        description="Run the evaluation harness; arguments are passed to eval.run.",
    )
    ev.add_argument("args", nargs=argparse.REMAINDER)

    _judge_parser(sub)

    for name, sp in sub.choices.items():
        sp.formatter_class = argparse.RawDescriptionHelpFormatter
        sp.epilog = f"example:\n  {EXAMPLES[name]}" if name in EXAMPLES else None
        _add_common(sp, top=False)
    return p


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse ``argv``; everything after ``eval`` but convlab's own flags goes to the harness.

    (``argparse.REMAINDER`` alone drops a first argument that starts with ``--``.)
    """
    args, extra = parser.parse_known_args(argv)
    if args.command == "eval":
        own = {"-q", "--quiet", "-v", "--verbose", "--debug"}
        args.args = [a for a in argv[argv.index("eval") + 1 :] if a not in own]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``convlab`` command; returns the exit code (see the module docstring)."""
    command, debug = "", False
    try:
        parser = _parser()
        try:
            args = _parse(parser, list(sys.argv[1:] if argv is None else argv))
        except SystemExit as exc:  # argparse printed usage or help (or --version)
            return EXIT_OK if exc.code in (0, None) else EXIT_USAGE
        command, debug = args.command, args.debug
        handlers = {
            "index": _index,
            "search": _search,
            "show": _show,
            "stats": _stats,
            "eval": _eval,
            "judge": _judge,
        }
        code = handlers[command](args)
        sys.stdout.flush()  # a closed pipe shows up here, inside the handler of BrokenPipeError
        return code
    except BrokenPipeError:
        # Python's recipe (library/signal, "Note on SIGPIPE"): point stdout at devnull so the
        # flush at exit does not raise again, and leave without a word.
        devnull = os.open(os.devnull, os.O_WRONLY)
        with contextlib.suppress(OSError, ValueError):  # ValueError: a test's captured stdout
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"{'convlab ' + command if command else 'convlab'}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        name = f"convlab {command}" if command else "convlab"
        if is_input_error(exc):
            print(f"{name}: {one_line(exc)}", file=sys.stderr)
            return EXIT_USAGE
        if debug:
            traceback.print_exc()
            print(f"{name}: internal error ({type(exc).__name__})", file=sys.stderr)
            return EXIT_INTERNAL
        where = write_crash_report(exc, argv)
        print(
            f"{name}: internal error ({one_line(exc, type_name=True)}); the traceback is in "
            f"{where} (--debug prints it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _index(args: argparse.Namespace) -> int:
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
            strategy=args.strategy,
            max_tokens=args.max_tokens,
            index_kind=args.index_kind,
            redact=args.redact,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    store = Store(args.store)

    def log(message: str) -> None:
        if not args.quiet:
            print(f"convlab index: {message}", file=sys.stderr, flush=True)

    log(f"indexing {len(paths)} path{'s' * (len(paths) != 1)} into {store.directory}")
    embedder = _embedder(args.embedder, args.backend)
    engine = _engine(args.engine, args.address)
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
            engine=engine,
        )
    finally:
        engine.close()
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


def _engine(name: str, address: str | None) -> Any:
    from convlab.engines import get_engine

    if address is not None and name != "ray":
        raise UsageError("--address joins a Ray cluster: use it with --engine ray")
    try:
        return get_engine(name, **({"address": address} if address else {}))
    except ImportError as exc:  # the extra is missing: one line naming it
        raise UsageError(str(exc)) from None


def _parse_date(text: str | None, option: str, *, end: bool = False) -> datetime | None:
    """A date or ISO time as UTC; a bare date ends at its last microsecond when ``end``."""
    if text is None:
        return None
    try:
        d = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"{option} expects a date like 2026-01-31 or a time like 2026-01-31T14:30, got {text!r}"
        ) from None
    try:
        date.fromisoformat(text.strip())
        bare = True
    except ValueError:
        bare = False
    if end and bare:
        d = d.replace(hour=23, minute=59, second=59, microsecond=999_999)
    return d.replace(tzinfo=UTC) if d.tzinfo is None else d.astimezone(UTC)


def _search_options(args: argparse.Namespace) -> SearchOptions:
    from convlab.retrieval import Retrieval, SearchOptions

    since = _parse_date(args.since, "--since")
    until = _parse_date(args.until, "--until", end=True)
    if since is not None and until is not None and since > until:
        raise UsageError(f"--since {args.since} is after --until {args.until}")
    try:
        return SearchOptions(
            k=args.k,
            retrieval=(
                Retrieval.HYBRID
                if args.hybrid
                else Retrieval.LEXICAL
                if args.lexical
                else Retrieval.DENSE
            ),
            conversations=(args.conversation,) if args.conversation else None,
            roles=tuple(args.role) if args.role else None,
            since=since,
            until=until,
            recency=args.recency,
            density=args.density,
            mmr=args.mmr,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _filters(args: argparse.Namespace) -> str:
    named = [
        f"--{name} {value}"
        for name, value in (
            ("conversation", args.conversation),
            ("role", ",".join(args.role or []) or None),
            ("since", args.since),
            ("until", args.until),
        )
        if value
    ]
    return f" with {' '.join(named)}" if named else ""


def _search(args: argparse.Namespace) -> int:
    from convlab.embed import manifest_embedder
    from convlab.retrieval.search import search
    from convlab.store import Store

    if not args.query.strip():
        raise UsageError("the query is empty")
    if args.k < 1:
        raise UsageError("-k must be at least 1")
    options = _search_options(args)
    store = Store(args.store)
    manifest = store.manifest()
    index = store.index()
    name = args.embedder or manifest_embedder(manifest)
    embedder = _embedder(name, args.backend, model_id=str(manifest.get("model_id", "")))
    bm25 = store.bm25() if options.retrieval.needs_bm25 else None  # saved with the store
    hits = search(index, args.query, embedder=embedder, options=options, bm25=bm25)
    if hits.height == 0:
        print(f"convlab search: no results for {args.query!r}{_filters(args)}", file=sys.stderr)
        return EXIT_NO_RESULTS
    rows = describe_hits(store, hits)
    if args.json:
        for r in rows:
            print(json.dumps(r, ensure_ascii=False, default=str))
    else:
        for line in hit_lines(rows, terminal_width()):
            print(line)
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    from convlab.store import Store

    if args.budget is not None and args.budget < 0:
        raise UsageError("--budget must not be negative")
    store = Store(args.store)
    sents = store.frame("sentences").filter(pl.col("conversation_id") == args.conversation)
    if sents.height == 0:
        raise UsageError(f"no conversation {args.conversation!r} in {store.directory}")
    if args.turn is not None:
        sents = sents.filter(pl.col("turn_index") == args.turn)
        if sents.height == 0:
            raise UsageError(f"conversation {args.conversation!r} has no turn {args.turn}")
    width = terminal_width()
    conv = store.frame("conversations").filter(pl.col("conversation_id") == args.conversation)
    title = conv["title"][0] if conv.height else None
    print(clip(printable(f"{args.conversation}: {title}" if title else args.conversation), width))
    if conv.height and conv["source_path"][0]:
        print(f"source: {short_path(printable(conv['source_path'][0]), width - 8)}")
    starts = dict(
        store.frame("turns")
        .filter(pl.col("conversation_id") == args.conversation)
        .select("turn_index", "started_at")
        .iter_rows()
    )
    role_w = max(len(r) for r in sents["role"].unique().to_list())
    for (turn,), part in sents.sort("position").group_by("turn_index", maintain_order=True):
        started = starts.get(turn)
        when = f" · {started:%Y-%m-%d %H:%M}" if started else ""
        print(f"== turn {turn}{when}")
        msg_w = len(str(part["message_index"].max()))
        for (msg, role), m in part.group_by("message_index", "role", maintain_order=True):
            label = f"  {role:<{role_w}}  #{msg:<{msg_w}}  "
            for line in wrapped(label, " ".join(m["text"].to_list()), width):
                print(line)
    if args.budget is not None:
        from convlab.resurrection import resurrect

        units = store.frame("units").filter(pl.col("conversation_id") == args.conversation)
        if args.turn is not None:
            units = units.filter(pl.col("turn_index") == args.turn)
        res = resurrect(units["unit_id"], args.budget, units=units, chunks=store.frame("sentences"))
        print(f"== resurrected context: {res.tokens_used}/{args.budget} tokens (* = a target)")
        for r in res.context.iter_rows(named=True):
            mark = "*" if r["is_target"] else " "
            label = f"{mark} {r['role']:<{role_w}}  t{r['turn_index']}  "
            for line in wrapped(label, r["text"], width):
                print(line)
    return EXIT_OK


def _stats(args: argparse.Namespace) -> int:
    from convlab.store import Store, StoreDamaged

    store = Store(args.store)
    try:
        info = _store_info(store, verify=args.verify)
    except StoreDamaged as exc:
        print(f"convlab stats: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(info, indent=1, default=str))
        return EXIT_OK
    c, cfg = info["counts"], info["config"]
    first, last = info["messages_from"], info["messages_to"]
    print(f"store: {info['store']} (version {info['version']}, updated {info['updated']})")
    print(
        f"holds: {c.get('conversations', 0)} conversations, {c.get('turns', 0)} turns, "
        f"{c.get('units', 0)} units (mean {info['unit_tokens_mean']:.0f} tokens per unit)"
    )
    print(f"messages: {first or 'undated'} .. {last or 'undated'}")
    print(
        f"built with: strategy {cfg.get('strategy')}, max tokens "
        f"{cfg.get('max_tokens', cfg.get('budget'))}, index "
        f"{cfg.get('index_kind')}, embedder {info['model_id']}, redact {cfg.get('redact')}"
    )
    print(
        f"transcripts: {info['files']} files indexed, {info['files_with_skips']} with skipped "
        f"records ({info['skipped_records']} records skipped)"
    )
    print(
        f"size on disk: {_size(info['bytes_total'])} (version {_size(info['bytes_version'])}, "
        f"embedding cache {_size(info['bytes_cache'])})"
    )
    print(info["verify"])
    return EXIT_OK


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _store_info(store: Any, *, verify: bool) -> dict[str, Any]:
    """What ``convlab stats`` prints, read from one pinned version of the store."""
    m = store.manifest()
    version = store.version
    status = store.verify().line() if verify else None
    units = store.frame("units")
    convs = store.frame("conversations")
    files = m.get("files", {})
    skips = [int(r.get("skipped", 0)) for r in files.values()]

    def size(root: Any) -> int:
        return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.is_dir() else 0

    first = convs["started_at"].min() if convs.height else None
    last = convs["ended_at"].max() if convs.height else None
    updated = m.get("updated_at")
    if status is None:
        status = (
            "checked: the manifest and every file's size; `--verify` checks every byte"
            if m.get("version_files") is not None
            else "not verifiable: written before stores recorded checksums; `convlab index` "
            "adds them"
        )
    info = {
        "store": str(store.directory),
        "version": version.name,
        "model_id": m["model_id"],
        "config": m["config"],
        "counts": m["counts"],
        "files": len(files),
        "files_with_skips": sum(1 for n in skips if n),
        "skipped_records": sum(skips),
        "messages_from": first.date().isoformat() if first else None,
        "messages_to": last.date().isoformat() if last else None,
        "updated": datetime.fromtimestamp(updated, UTC).strftime("%Y-%m-%d %H:%M UTC")
        if updated
        else None,
        "bytes_version": size(version),
        "bytes_cache": size(store.directory / "cache"),
        "unit_tokens_mean": float(units["n_tokens"].cast(pl.Float64).mean() or 0.0),
        "units_by_role": dict(units.group_by("role").len().sort("role").iter_rows()),
        "verify": status,
    }
    info["bytes_total"] = info["bytes_version"] + info["bytes_cache"]
    return info


def _eval(args: argparse.Namespace) -> int:
    from convlab.paths import REPO_ROOT

    if (REPO_ROOT / "eval" / "run.py").is_file() and str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    try:
        from eval.run import main as run_main  # the harness lives in the repo's eval/ package
    except ImportError:
        raise UsageError("the evaluation harness (eval/run.py) is not importable here") from None
    try:
        return int(run_main(args.args) or 0)
    except SystemExit as exc:  # the harness's argparse printed its usage or help
        return EXIT_OK if exc.code in (0, None) else EXIT_USAGE


# --- judge: pooled relevance judgments (convlab.judge) -------------------------------------------

DEFAULT_JUDGE_SYSTEMS = "message,turn_pair,whole_turn,bm25:message,hybrid:message"


def _judge_parser(sub: Any) -> None:
    ju = sub.add_parser(
        "judge",
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
    ju.add_argument("--docs", default="turn", choices=["turn", "message"], help="(%(default)s)")
    ju.add_argument("--qrels", type=Path, help="the qrels JSONL file judgments are appended to")
    ju.add_argument("--assessor", help="your name, recorded with each judgment")
    ju.add_argument("--cache", default="runs/cache", help="embedding cache (%(default)s)")
    ju.add_argument(
        "--embedder", default="minilm", choices=["minilm", "hash"], help=argparse.SUPPRESS
    )


def _judge(args: argparse.Namespace) -> int:
    from convlab import judge

    if args.target[0] == "agreement":
        if len(args.target) != 3:
            raise UsageError("usage: convlab judge agreement QRELS_A QRELS_B")
        a = judge.agreement(Path(args.target[1]), Path(args.target[2]))
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
    data = _judge_data(Path(args.target[0]), args.data, args.docs)
    systems = judge.systems_from_names([s for s in args.systems.split(",") if s])
    from convlab.embed import CachedEmbedder

    embedder = CachedEmbedder(_embedder(args.embedder), args.cache)
    pool = judge.build_pool(
        data, systems, embedder=embedder, depth=args.depth, seed=args.seed, scope="conversation"
    )
    log = judge.JudgmentLog(args.qrels, assessor=args.assessor)
    if log.torn is not None:
        print(f"note: the last line of {args.qrels} was torn and was cut off", file=sys.stderr)
    judge.judge_loop(pool, log, color=sys.stdout.isatty())
    return EXIT_OK


def _judge_data(queries: Path, data: Path, docs: str) -> Any:
    """Unlabelled queries over transcripts (or a labelled folder's corpus)."""
    from convlab.evaluation.datasets import LabelledData, load_labelled
    from convlab.evaluation.queries import read_queries
    from convlab.loaders import load

    if data.is_dir() and ((data / "sources.json").is_file() or (data / "queries.jsonl").is_file()):
        corpus = load_labelled(data).corpus
    else:
        corpus = load(data)
    if docs == "message":
        corpus = corpus.with_doc_kind("message")
    return LabelledData(queries.stem, corpus, read_queries(queries))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
