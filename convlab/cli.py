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
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import shutil
import sys
import tempfile
import textwrap
import traceback
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl

__all__ = ["main"]

EXIT_OK, EXIT_NO_RESULTS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE
DEFAULT_STORE = Path("~/.convlab/store")
EXAMPLES = {
    "index": "convlab index ~/.claude/projects --store ~/.convlab/store",
    "search": 'convlab search "nginx websockets" --since 2026-01-01 --role user -k 5',
    "show": "convlab show 3f2a9c1e-SESSION --turn 3 --budget 512",
    "stats": "convlab stats --store ~/.convlab/store",
    "eval": "convlab eval --data data/sample --out runs/eval",
}
SKIPPED_FILES_SHOWN = 5
# OS errors that are the user's or the machine's business (a path, a permission, a full disk),
# reported as one line with exit 2; any other OSError is treated as a bug.
INPUT_ERRNOS = {
    errno.ENOENT,
    errno.ENOTDIR,
    errno.EISDIR,
    errno.EACCES,
    errno.EPERM,
    errno.ELOOP,
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EROFS,
    errno.ENAMETOOLONG,
}


class UsageError(Exception):
    """A user error: reported as one line with exit code 2."""


def _embedder(name: str) -> Any:
    from convlab.embed import HashEmbedder, MiniLMEmbedder

    if name == "minilm":
        return MiniLMEmbedder()
    if name == "hash":  # a fast fake, for tests of the command itself
        return HashEmbedder()
    raise UsageError(f"unknown embedder {name!r}")


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
    ix.add_argument("--budget", type=int, default=256, help="unit token budget (%(default)s)")
    ix.add_argument("--index", dest="index_kind", default="flat", choices=["flat", "hnsw", "ivf"])
    ix.add_argument(
        "--redact",
        default="tool-output",
        choices=["tool-output", "all", "none"],
        help="replace secret-shaped strings before embedding or storing (%(default)s)",
    )
    ix.add_argument("--rebuild", action="store_true", help="start the store from scratch")
    ix.add_argument("--wait", action="store_true", help="wait for another indexer to finish")
    ix.add_argument(
        "--embedder", default="minilm", choices=["minilm", "hash"], help=argparse.SUPPRESS
    )

    se = sub.add_parser(
        "search",
        help="search a store",
        description="Search a store; the best unit per turn (per message in dialogs), best first.",
    )
    se.add_argument("query")
    store_arg(se)
    se.add_argument("-k", type=int, default=10, help="results (%(default)s)")
    se.add_argument("--hybrid", action="store_true", help="fuse dense and BM25 ranks (RRF)")
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

    sh = sub.add_parser(
        "show", help="print a turn with its resurrected context", description="Print a turn."
    )
    sh.add_argument("conversation")
    store_arg(sh)
    sh.add_argument("--turn", type=int, default=None, help="turn index (default: all turns)")
    sh.add_argument("--budget", type=int, default=None, help="resurrection budget in tokens")

    st = sub.add_parser("stats", help="what a store holds", description="Store statistics.")
    store_arg(st)
    st.add_argument("--json", action="store_true")

    ev = sub.add_parser(
        "eval",
        help="run the strategy comparison (see python -m eval.run --help)",
        description="Run the evaluation harness; arguments are passed to eval.run.",
    )
    ev.add_argument("args", nargs=argparse.REMAINDER)

    for name, sp in sub.choices.items():
        sp.formatter_class = argparse.RawDescriptionHelpFormatter
        sp.epilog = f"example:\n  {EXAMPLES[name]}" if name in EXAMPLES else None
        _add_common(sp, top=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``convlab`` command; returns the exit code (see the module docstring)."""
    command, debug = "", False
    try:
        parser = _parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse printed usage or help (or --version)
            return EXIT_OK if exc.code in (0, None) else EXIT_USAGE
        command, debug = args.command, args.debug
        handlers = {
            "index": _index,
            "search": _search,
            "show": _show,
            "stats": _stats,
            "eval": _eval,
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
        print(f"convlab {command}: interrupted".replace("  ", " "), file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        name = f"convlab {command}" if command else "convlab"
        if _is_input_error(exc):
            print(f"{name}: {_one_line(exc)}", file=sys.stderr)
            return EXIT_USAGE
        if debug:
            traceback.print_exc()
            print(f"{name}: internal error ({type(exc).__name__})", file=sys.stderr)
            return EXIT_INTERNAL
        where = _write_crash_report(exc, argv)
        print(
            f"{name}: internal error ({_one_line(exc, type_name=True)}); the traceback is in "
            f"{where} (--debug prints it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _is_input_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the user's or the data's fault (exit 2) rather than a bug (exit 3)."""
    from convlab.loaders import LoadError
    from convlab.store import StoreDamaged, StoreLocked, StoreMismatch

    if isinstance(exc, UsageError | LoadError | StoreDamaged | StoreLocked | StoreMismatch):
        return True
    if isinstance(exc, FileNotFoundError | NotADirectoryError | IsADirectoryError):
        return True  # a missing store or path, with or without an errno
    return isinstance(exc, OSError) and exc.errno in INPUT_ERRNOS


def _one_line(exc: BaseException, *, type_name: bool = False) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type_name else text


def _crash_dir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "convlab"


def _write_crash_report(exc: BaseException, argv: Sequence[str] | None) -> Path:
    """Write the traceback to a new crash file (atomically) and return its path."""
    from convlab import __version__

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    text = (
        f"convlab {__version__}, Python {sys.version.split()[0]}\n"
        f"argv: {list(sys.argv[1:] if argv is None else argv)!r}\n\n"
        + "".join(traceback.format_exception(exc))
    )
    for folder in (_crash_dir(), Path(tempfile.gettempdir())):
        path = folder / f"crash-{stamp}-{os.getpid()}.txt"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _write_atomic(path, text)
        except OSError:
            continue
        return path
    return Path("(nowhere: neither the cache nor the temp dir is writable)")


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary name beside ``path``, fsync, then rename it into place."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _width() -> int:
    """Columns of the terminal (``$COLUMNS`` first; 100 when stdout is not a terminal)."""
    return max(40, shutil.get_terminal_size((100, 24)).columns)


def _short_path(path: str, n: int = 60) -> str:
    """``path`` with the home folder as ``~`` and, when longer than ``n``, its head as ``…``."""
    home = os.path.expanduser("~")
    p = "~" + path[len(home) :] if home not in ("", "/") and path.startswith(home + "/") else path
    if len(p) <= n:
        return p
    parts = p.split("/")
    out = parts[-1]
    for part in reversed(parts[:-1]):
        if len(part) + len(out) + 3 > n:
            break
        out = f"{part}/{out}"
    return f"…/{out}"


def _skip_report(skipped: Sequence[tuple[str, int, str]], *, verbose: bool) -> list[str]:
    """Lines naming the skipped files: every skip with ``verbose``, else a few files, shortened."""
    if not skipped:
        return ["skipped: 0"]
    by_file: dict[str, list[tuple[int, str]]] = {}
    for path, line, reason in skipped:
        by_file.setdefault(str(path), []).append((int(line or 0), str(reason)))
    head = f"skipped: {len(skipped)} in {len(by_file)} file{'s' * (len(by_file) != 1)}"
    if verbose:
        return [head] + [
            f"  {path}:{line}: {reason}" if line else f"  {path}: {reason}"
            for path, line, reason in skipped
        ]
    out = [head + " (--verbose lists each)"]
    for path, items in list(by_file.items())[:SKIPPED_FILES_SHOWN]:
        reasons: dict[str, int] = {}
        for _, r in items:
            reasons[r] = reasons.get(r, 0) + 1
        top = sorted(reasons.items(), key=lambda kv: -kv[1])
        if len(items) == 1:
            detail = top[0][0]
        else:
            detail = f"{len(items)} records (" + ", ".join(f"{r}: {n}" for r, n in top[:3])
            detail += ", …)" if len(top) > 3 else ")"
        out.append(f"  {_short_path(path)}: {_clip(detail, 100)}")
    if len(by_file) > SKIPPED_FILES_SHOWN:
        out.append(f"  … and {len(by_file) - SKIPPED_FILES_SHOWN} more files")
    return out


def _index(args: argparse.Namespace) -> int:
    from convlab.store import Store, StoreConfig, default_history_paths

    paths = list(args.paths) or default_history_paths()
    if not paths:
        raise UsageError(
            "no PATH given and no Claude Code, Codex or Amplifier history found in the usual places"
        )
    try:
        config = StoreConfig(
            strategy=args.strategy,
            budget=args.budget,
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
    embedder = _embedder(args.embedder)
    if args.quiet and hasattr(embedder, "show_progress"):
        embedder.show_progress = False  # the model's progress bar
    summary = store.update(
        paths,
        config=config,
        embedder=embedder,
        rebuild=args.rebuild,
        wait=args.wait,
        progress=False if args.quiet else None,
        log=log,
    )
    report = _skip_report(summary.skipped, verbose=args.verbose)
    for line in _with_skip_report(summary.lines(), report):
        print(line)
    print(f"store: {store.directory}")
    return EXIT_OK


def _with_skip_report(lines: list[str], report: list[str]) -> list[str]:
    """The store's summary with its skip lines replaced by ``report`` (which names the files)."""
    out: list[str] = []
    in_skips = False
    for line in lines:
        if line.startswith("skipped records:"):
            in_skips = True
            out += report
            continue
        if in_skips and line.startswith("  "):
            continue
        in_skips = False
        out.append(line)
    return out if in_skips or any(r in out for r in report[:1]) else out + report


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


def _search_options(args: argparse.Namespace) -> Any:
    from convlab.search import SearchOptions

    since = _parse_date(args.since, "--since")
    until = _parse_date(args.until, "--until", end=True)
    if since is not None and until is not None and since > until:
        raise UsageError(f"--since {args.since} is after --until {args.until}")
    try:
        return SearchOptions(
            k=args.k,
            hybrid=args.hybrid,
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
    from convlab.search import search
    from convlab.store import Store

    if not args.query.strip():
        raise UsageError("the query is empty")
    if args.k < 1:
        raise UsageError("-k must be at least 1")
    options = _search_options(args)
    store = Store(args.store)
    manifest = store.manifest()
    index = store.index()
    embedder = _embedder(args.embedder or _embedder_name(manifest))
    bm25 = None
    if args.hybrid:
        from convlab.lexical import BM25Index

        bm25 = BM25Index.build(index.units)
    hits = search(index, args.query, embedder=embedder, options=options, bm25=bm25)
    if hits.height == 0:
        print(f"convlab search: no results for {args.query!r}{_filters(args)}", file=sys.stderr)
        return EXIT_NO_RESULTS
    rows = _describe_hits(store, hits)
    if args.json:
        for r in rows:
            print(json.dumps(r, ensure_ascii=False, default=str))
    else:
        for line in _hit_lines(rows, _width()):
            print(line)
    return EXIT_OK


def _embedder_name(manifest: dict[str, Any]) -> str:
    return "hash" if "hash" in str(manifest.get("model_id", "")).lower() else "minilm"


def _clip(text: str | None, n: int) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= n else t[: max(0, n - 1)] + "…"


def _messages(store: Any) -> pl.DataFrame:
    """Where each message is in its source file.

    Empty for a store written before messages were kept: its hits carry the conversation's file
    and no line.
    """
    from convlab import schema

    cols = ["conversation_id", "message_index", "source_path", "source_line"]
    try:
        return store.frame("messages").select(cols)
    except FileNotFoundError:
        return schema.empty(schema.MESSAGES).select(cols)


def _describe_hits(store: Any, hits: pl.DataFrame) -> list[dict[str, Any]]:
    """One record per hit: rank, score, unit, where it is (file, line, message) and its text."""
    convs = store.frame("conversations").select(
        "conversation_id", "title", pl.col("source_path").alias("conversation_path")
    )
    questions = (
        store.frame("sentences")
        .filter(pl.col("role") == "user")
        .sort("position")
        .group_by("conversation_id", "turn_index", maintain_order=True)
        .agg(pl.col("text").str.join(" ").alias("question"))
    )
    turns = store.frame("turns").select("conversation_id", "turn_index", "started_at")
    h = (
        hits.join(convs, on="conversation_id", how="left")
        .join(questions, on=["conversation_id", "turn_index"], how="left")
        .join(turns, on=["conversation_id", "turn_index"], how="left")
        .join(_messages(store), on=["conversation_id", "message_index"], how="left")
        .sort("rank")
    )
    out = []
    for r in h.iter_rows(named=True):
        when = r.get("timestamp") or r.get("started_at")
        out.append(
            {
                "rank": r["rank"],
                "score": round(float(r["score"]), 4),
                "unit_id": r["unit_id"],
                "doc_id": r["doc_id"],
                "conversation_id": r["conversation_id"],
                "title": r.get("title"),
                "turn": r["turn_index"],
                "message_index": r["message_index"],
                "role": r.get("role"),
                "timestamp": when.isoformat() if when else None,
                "source_path": r.get("source_path") or r.get("conversation_path"),
                "source_line": r.get("source_line"),
                "question": r.get("question"),
                "snippet": _clip(r.get("text"), 300),
            }
        )
    return out


def _hit_lines(rows: list[dict[str, Any]], width: int) -> list[str]:
    """Hits for people: a header line per hit, then its question, match and place, clipped."""
    rank_w = max(len(str(r["rank"])) for r in rows)
    pad = " " * (rank_w + 2)
    out = []
    for r in rows:
        when = (r["timestamp"] or "")[:16].replace("T", " ") or "undated"
        left = f"{r['rank']:>{rank_w}}. {r['score']:.3f}  "
        right = f"  {when}  turn {r['turn']}"
        room = max(8, width - len(left) - len(right))
        title = _clip(r["title"] or r["conversation_id"], room)
        out.append(f"{left}{title.ljust(room)}{right}")
        place = r["source_path"] or r["conversation_id"]
        where = f":{r['source_line']}" if r["source_line"] else ""
        where += f" (message {r['message_index']})"
        body = [
            ("Q:", _clip(r["question"] or "(no user text)", width - len(pad) - 7)),
            ("match:", _clip(f"[{r['role'] or 'turn'}] {r['snippet']}", width - len(pad) - 7)),
            ("at:", _short_path(place, width - len(pad) - 7 - len(where)) + where),
        ]
        out += [f"{pad}{label:<7}{text}" for label, text in body]
    return out


def _wrapped(label: str, text: str, width: int) -> list[str]:
    """``label`` then ``text`` wrapped to ``width``, continuation lines under the text."""
    indent = " " * len(label)
    lines: list[str] = []
    for i, para in enumerate(text.splitlines() or [""]):
        first = label if i == 0 else indent
        lines += textwrap.wrap(
            para,
            width=width,
            initial_indent=first,
            subsequent_indent=indent,
            break_on_hyphens=False,
            replace_whitespace=False,
        ) or [first.rstrip()]
    return lines


def _show(args: argparse.Namespace) -> int:
    from convlab.store import Store

    store = Store(args.store)
    sents = store.frame("sentences").filter(pl.col("conversation_id") == args.conversation)
    if sents.height == 0:
        raise UsageError(f"no conversation {args.conversation!r} in {store.directory}")
    if args.turn is not None:
        sents = sents.filter(pl.col("turn_index") == args.turn)
        if sents.height == 0:
            raise UsageError(f"conversation {args.conversation!r} has no turn {args.turn}")
    width = _width()
    conv = store.frame("conversations").filter(pl.col("conversation_id") == args.conversation)
    title = conv["title"][0] if conv.height else None
    print(_clip(f"{args.conversation}: {title}" if title else args.conversation, width))
    if conv.height and conv["source_path"][0]:
        print(_clip(f"  source: {_short_path(conv['source_path'][0], width)}", width))
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
            for line in _wrapped(label, " ".join(m["text"].to_list()), width):
                print(line)
    if args.budget is not None:
        from convlab.resurrect import resurrect

        units = store.frame("units").filter(pl.col("conversation_id") == args.conversation)
        if args.turn is not None:
            units = units.filter(pl.col("turn_index") == args.turn)
        hits = units.with_row_index("rank", offset=1).with_columns(pl.col("rank").cast(pl.Int32))
        res = resurrect(hits, args.budget, units=units, sentences=store.frame("sentences"))
        print(f"== resurrected context: {res.tokens_used}/{args.budget} tokens (* = a target)")
        for r in res.context.iter_rows(named=True):
            mark = "*" if r["is_target"] else " "
            label = f"{mark} {r['role']:<{role_w}}  t{r['turn_index']}  "
            for line in _wrapped(label, r["text"], width):
                print(line)
    return EXIT_OK


def _stats(args: argparse.Namespace) -> int:
    from convlab.store import Store

    store = Store(args.store)
    m = store.manifest()
    units = store.frame("units")
    info = {
        "store": str(store.directory),
        "model_id": m["model_id"],
        "config": m["config"],
        "counts": m["counts"],
        "files": len(m["files"]),
        "unit_tokens_mean": float(units["n_tokens"].cast(pl.Float64).mean() or 0.0),  # type: ignore[arg-type]
        "units_by_role": dict(units.group_by("role").len().sort("role").iter_rows()),
    }
    if args.json:
        print(json.dumps(info, indent=1, default=str))
    else:
        for k, v in info.items():
            print(f"{k}: {v}")
    return EXIT_OK


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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
