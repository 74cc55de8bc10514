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
    from convlab.evaluation.systems import System
    from convlab.retrieval.search import SearchOptions
    from convlab.store import Store

NAME = "search"
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
    se.add_argument("-k", type=int, default=10, help="results (%(default)s)")
    mode = se.add_mutually_exclusive_group()
    mode.add_argument(
        "--system",
        default=None,
        metavar="NAME|FILE",
        help="the system to search with: 'default' (the fusion chosen by cross-validation), a "
        "view searched alone (turn_pair, bm25:message, hybrid:sequential) or an experiment "
        "file (FILE or FILE#NAME); its views must be in the store (default: the store's own "
        "system, chosen by `convlab index --system`)",
    )
    mode.add_argument(
        "--hybrid",
        action="store_true",
        help="dense and BM25 ranks of the store's first strategy fused (RRF)",
    )
    mode.add_argument(
        "--lexical", action="store_true", help="BM25 alone over the store's first strategy"
    )
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
    from convlab.store import Store
    from convlab.store.search import StoreSearch

    if not args.query.strip():
        raise UsageError("the query is empty")
    if args.k < 1:
        raise UsageError("-k must be at least 1")
    options = search_options(args)
    store = Store(args.store)
    manifest = store.manifest()
    system = chosen_system(args, store)
    dense = any(v.retrieval.needs_vectors for v in system.views)
    embedder = embedder_for_vectors(manifest, args.embedder, args.backend) if dense else None
    try:
        hits = StoreSearch(store, embedder).search(
            args.query, system=system, k=args.k, options=options
        )
    except ValueError as exc:  # views the store does not hold, a filter the search refuses
        raise UsageError(str(exc)) from None
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


def chosen_system(args: argparse.Namespace, store: Store) -> System:
    """The system of ``--system``, ``--hybrid`` or ``--lexical``; else the store's own.

    ``--lexical`` searches the first strategy of the store by BM25; ``--hybrid`` fuses its
    dense and BM25 rankings.

    Raises:
        UsageError: a system name or file that cannot be resolved.
    """
    from convlab.systems import resolve_system

    own = store.system()
    if args.lexical or args.hybrid:
        first = next(iter(store.strategies()))
        return resolve_system(f"{'bm25' if args.lexical else 'hybrid'}:{first}")
    if args.system is None or args.system == own.name:
        return own
    try:
        return resolve_system(args.system)
    except ValueError as exc:
        raise UsageError(f"--system: {exc}") from None


def search_options(args: argparse.Namespace) -> SearchOptions:
    """The :class:`~convlab.retrieval.search.SearchOptions` of the command line.

    Raises:
        UsageError: a bad date, ``--since`` after ``--until``, or an option the search refuses.
    """
    from convlab.retrieval import SearchOptions

    since = parse_date(args.since, "--since")
    until = parse_date(args.until, "--until", end=True)
    if since is not None and until is not None and since > until:
        raise UsageError(f"--since {args.since} is after --until {args.until}")
    try:
        return SearchOptions(
            k=args.k,
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
