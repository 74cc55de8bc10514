"""``convlab search``: the best unit per turn (per message in dialogs), best first."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from convlab.app.cli.options import add_store, embedder_for_vectors, parse_date
from convlab.app.display import describe_hits, hit_lines, terminal_width
from convlab.app.exits import EXIT_NO_RESULTS, EXIT_OK, UsageError
from convlab.embed.factory import EMBEDDERS

if TYPE_CHECKING:
    from convlab.retrieval.search import SearchOptions

NAME = "search"
MAX_K = 10_000
"""The most results ``-k`` may ask for (a person reads tens; a script pages, it does not dump)."""
EXAMPLE = 'convlab search "nginx websockets" --since 2026-01-01 --role user -k 5'


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``search`` to the subcommands ``sub``."""
    from convlab import schema
    from convlab.embed import BACKENDS

    se: argparse.ArgumentParser = sub.add_parser(
        NAME,
        help="search a store",
        description="Search a store; the best unit per turn (per message in dialogs), best first.",
    )
    se.add_argument("query")
    add_store(se)
    se.add_argument("-k", type=int, default=10, help=f"results, 1 to {MAX_K:,} (%(default)s)")
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
    se.add_argument("--embedder", default=None, choices=EMBEDDERS.names(), help=argparse.SUPPRESS)
    se.add_argument(
        "--backend",
        default=None,
        choices=tuple(BACKENDS),
        help="query backend (default: the store's; onnx for a torch store when exported)",
    )
    return se


def run(args: argparse.Namespace) -> int:
    """Search ``args.store`` for ``args.query``; exit 1 when nothing matches."""
    from convlab.retrieval.search import search
    from convlab.store import Store

    if not args.query.strip():
        raise UsageError("the query is empty")
    try:  # bytes that are not UTF-8 reach argv as lone surrogates
        args.query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(f"the query is not UTF-8 text (character {exc.start + 1})") from None
    if not 1 <= args.k <= MAX_K:
        raise UsageError(f"-k must be at least 1 and at most {MAX_K:,}")
    options = search_options(args)
    store = Store(args.store)
    manifest = store.manifest()
    index = store.index()
    embedder = embedder_for_vectors(manifest, args.embedder, args.backend)
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


def search_options(args: argparse.Namespace) -> SearchOptions:
    """The :class:`~convlab.retrieval.search.SearchOptions` of the command line.

    Raises:
        UsageError: a bad date, ``--since`` after ``--until``, or an option the search refuses.
    """
    from convlab.retrieval import Retrieval, SearchOptions

    since = parse_date(args.since, "--since")
    until = parse_date(args.until, "--until", end=True)
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
    """The filters given, as the no-results line names them."""
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
