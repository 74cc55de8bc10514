"""``convlab search``: the best unit per turn (per message in dialogs), best first."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from convlab.app.cli.options import (
    add_store,
    embedder_for_vectors,
    parse_date,
    resolve_conversation,
)
from convlab.app.display import (
    color_wanted,
    describe_hits,
    hit_lines,
    json_line,
)
from convlab.app.exits import EXIT_NO_RESULTS, EXIT_OK, UsageError
from convlab.app.text import terminal_width
from convlab.defaults import POLICY, K
from convlab.embed.factory import EMBEDDERS

if TYPE_CHECKING:
    import polars as pl

    from convlab.resurrection import Resurrection
    from convlab.retrieval.search import SearchOptions
    from convlab.store import Store
    from convlab.systems.confidence import Verdict
    from convlab.systems.system import System

NAME = "search"
MAX_K = 10_000
"""The most results ``-k`` may ask for (a person reads tens; a script pages, it does not dump)."""
EXAMPLE = 'convlab search "nginx websockets" --since 2026-01-01 --role user -k 5 --budget 512'


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``search`` to the subcommands ``sub``."""
    from convlab import schema
    from convlab.embed import BACKENDS
    from convlab.fusion import FUSIONS

    se: argparse.ArgumentParser = sub.add_parser(
        NAME,
        help="search a store",
        description="Search a store; the best unit per turn (per message in dialogs), best first.",
    )
    se.add_argument("query")
    add_store(se)
    se.add_argument("-k", type=int, default=K, help=f"results, 1 to {MAX_K:,} (%(default)s)")
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
        help="dense and BM25 ranks of the store's first strategy fused (by --fusion)",
    )
    mode.add_argument(
        "--lexical", action="store_true", help="BM25 alone over the store's first strategy"
    )
    se.add_argument(
        "--fusion",
        default=None,
        choices=FUSIONS.names(),
        help="how a hybrid view (--hybrid, hybrid:STRATEGY) fuses its dense and BM25 ranks "
        "(default: rrf)",
    )
    se.add_argument(
        "--conversation", help="only this conversation: its id, or a unique start of it"
    )
    se.add_argument(
        "--project",
        action="append",
        metavar="PATH_OR_NAME",
        help="only sessions run in this project: a path matches that directory and those under "
        "it (., ~/src/app); a name matches a directory's last component (app); repeatable",
    )
    se.add_argument(
        "--role",
        action="append",
        choices=schema.ROLES,
        help="only hits of ROLE (tool: stores indexed with --include tool-output)",
    )
    se.add_argument(
        "--since",
        help="only hits on or after this time: 2026-01-31, an ISO time, an age before now "
        "(7d, 2w, 3h) or today/yesterday (UTC days)",
    )
    se.add_argument(
        "--until", help="only hits on or before this time, as --since (a whole day counts)"
    )
    se.add_argument("--recency", action="store_true", help="boost recent hits")
    se.add_argument(
        "--now", help="the time --recency measures age from (ISO date or time; default: now)"
    )
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
    add_context_options(se)
    se.add_argument(
        "--min-confidence",
        type=float,
        default=None,
        metavar="P",
        help="the least confidence (0..1) that something matched; below it the search says "
        "there is no confident match and exits 1 (default: the shipped model's threshold; "
        "0 shows every search's hits)",
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
    from convlab.app.cli.warm import open_store, store_search
    from convlab.systems.confidence import HITS, verdict
    from convlab.systems.search import system_scoring

    if not args.query.strip():
        raise UsageError("the query is empty")
    try:  # bytes that are not UTF-8 reach argv as lone surrogates
        args.query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(f"the query is not UTF-8 text (character {exc.start + 1})") from None
    if not 1 <= args.k <= MAX_K:
        raise UsageError(f"-k must be at least 1 and at most {MAX_K:,}")
    if args.budget is not None and args.budget < 1:
        raise UsageError("--budget must be at least 1 token")
    store = open_store(args.store)  # a server's warm one under `convlab serve`
    manifest = store.manifest()
    if args.conversation:
        args.conversation = resolve_conversation(store, args.conversation)
    options = search_options(args)
    if "tool" in (args.role or ()) and manifest.config.policy.get("tool_results") is not True:
        raise UsageError(
            f"--role tool: {store.directory} holds no tool output; index it with "
            "`convlab index --include tool-output --rebuild`"
        )
    conversations = store.frame("conversations") if args.project else None
    if conversations is not None:
        _check_projects(store, conversations, tuple(args.project))
    system = chosen_system(args, store)
    scoring = system_scoring(system, options)
    dense = any(v.retrieval.needs_vectors for v in system.views)
    named = (manifest.model_id, manifest.embedder, args.embedder, args.backend)
    embedder = (
        (named, lambda: embedder_for_vectors(manifest, args.embedder, args.backend))
        if dense
        else None
    )
    try:
        hits = store_search(store, embedder).search(
            args.query,
            system=system,
            k=max(args.k, HITS),  # the confidence reads the first HITS
            options=options,
            conversations_frame=conversations,
        )
        sure = verdict(args.query, hits, system.name, args.min_confidence)
    except ValueError as exc:  # views the store does not hold, a filter the search refuses
        raise UsageError(str(exc)) from None
    hits = hits.filter(hits["rank"] <= args.k)
    if hits.height == 0:
        print(f"convlab search: no results for {args.query!r}{_filters(args)}", file=sys.stderr)
        return EXIT_NO_RESULTS
    if not sure.confident and not args.json:
        print(f"convlab search: {no_confident_match(args.query, sure)}", file=sys.stderr)
        return EXIT_NO_RESULTS
    rows = describe_hits(store, hits, query=args.query, scoring=scoring)
    confidence = None if sure.confidence is None else round(sure.confidence, 3)
    if args.budget is not None:
        for r, context in zip(
            rows, hit_contexts(store, hits, args.budget, args.policy), strict=True
        ):
            r["context"] = context
    if args.json:
        for r in rows:
            print(json_line({**r, "confidence": confidence}))
    else:
        for line in hit_lines(
            rows,
            terminal_width(),
            query=args.query,
            color=color_wanted(),
            scoring=scoring,
        ):
            print(line)
    return EXIT_OK if sure.confident else EXIT_NO_RESULTS


def no_confident_match(query: str, sure: Verdict) -> str:
    """The line that says a search found nothing it is confident of, and how to see its hits."""
    return (
        f"no confident match for {query!r} (confidence {sure.confidence:.2f}, below "
        f"{sure.threshold:.2f}); --min-confidence 0 shows the closest hits"
    )


def add_context_options(sp: argparse.ArgumentParser) -> None:
    """``--budget N`` and ``--policy NAME``: bring back each hit's context (resurrection)."""
    from convlab.resurrection import POLICIES

    sp.add_argument(
        "--budget",
        type=int,
        default=None,
        metavar="TOKENS",
        help="bring back each hit's context, best hits first, within TOKENS model tokens",
    )
    sp.add_argument(
        "--policy",
        default=POLICY,
        choices=POLICIES.names(),
        help="what a hit brings back with --budget: what was embedded with it (unit), its "
        "turn or message (doc), that and the docs beside it (window), ... (%(default)s)",
    )


def hit_contexts(
    store: Store, hits: pl.DataFrame, budget: int, policy: str
) -> list[dict[str, Any]]:
    """Each hit's resurrected context, in rank order (see ``resurrection.render.hit_contexts``).

    Raises:
        UsageError: a budget under 1 token, or a store without chunks.
    """
    from convlab.resurrection.render import hit_contexts as per_hit

    return per_hit(resurrect_hits(store, hits, budget, policy), hits.height)


def resurrect_hits(store: Store, hits: pl.DataFrame, budget: int, policy: str) -> Resurrection:
    """The context of ``hits`` within ``budget``: one budget walk over them, best first.

    The units are the hits' own (their ``chunk_ids`` and ``doc_id``; targets from the store's
    units when it has them), read against the store's chunks and messages of the hits'
    conversations (:func:`convlab.resurrection.resurrect`).

    Raises:
        UsageError: a budget under 1 token, or a store without chunks.
    """
    import polars as pl

    from convlab.resurrection import resurrect

    if budget < 1:
        raise UsageError("--budget must be at least 1 token")
    convs = hits.select("conversation_id").unique()

    def of_hits(name: str) -> pl.DataFrame | None:
        try:
            return store.frame(name).join(convs, on="conversation_id", how="semi")
        except (FileNotFoundError, KeyError, ValueError):  # a frame this store does not keep
            return None

    units = hits.select("unit_id", "chunk_ids", pl.concat_list("doc_id").alias("doc_ids")).unique(
        "unit_id", keep="first", maintain_order=True
    )
    stored = of_hits("units")
    if stored is not None and "target_chunk_id" in stored.columns:
        targets = stored.select("unit_id", "target_chunk_id").unique("unit_id")
        units = units.join(targets, on="unit_id", how="left")
    chunks = of_hits("chunks")
    if chunks is None:
        raise UsageError(f"{store.directory} keeps no chunks to bring back; run `convlab index`")
    return resurrect(
        hits["unit_id"],
        budget,
        units=units,
        chunks=chunks,
        policy=policy,
        doc_ids=hits["doc_id"],
        messages=of_hits("messages"),
    )


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
    from datetime import UTC, datetime

    from convlab.retrieval import SearchOptions

    now = datetime.now(UTC)  # the one reference time of ages and day names
    since = parse_date(args.since, "--since", now=now)
    until = parse_date(args.until, "--until", end=True, now=now)
    if since is not None and until is not None and since > until:
        raise UsageError(f"--since {args.since} is after --until {args.until}")
    try:  # the flags are the flat options' keys
        return SearchOptions.of(
            k=args.k,
            conversations=(args.conversation,) if args.conversation else None,
            projects=tuple(args.project) if args.project else None,
            roles=tuple(args.role) if args.role else None,
            since=since,
            until=until,
            recency=args.recency,
            now=parse_date(args.now, "--now"),
            density=args.density,
            mmr=args.mmr,
            **({"fusion": args.fusion} if args.fusion else {}),
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _filters(args: argparse.Namespace) -> str:
    """The filters given, as the no-results line names them."""
    named = [
        f"--{name} {value}"
        for name, value in (
            ("conversation", args.conversation),
            ("project", ",".join(args.project or []) or None),
            ("role", ",".join(args.role or []) or None),
            ("since", args.since),
            ("until", args.until),
        )
        if value
    ]
    return f" with {' '.join(named)}" if named else ""


def _check_projects(store: Store, conversations: pl.DataFrame, projects: tuple[str, ...]) -> None:
    """Refuse ``--project`` values that match no stored conversation, naming the projects known.

    Raises:
        UsageError: one line listing up to five of the store's projects.
    """
    from convlab.retrieval.filters import conversations_in_projects

    if conversations_in_projects(conversations, projects):
        return
    known = sorted(conversations["project"].drop_nulls().unique().to_list())
    listed = ", ".join(known[:5]) + (f" and {len(known) - 5} more" if len(known) > 5 else "")
    raise UsageError(
        f"--project {' '.join(projects)}: no session of {store.directory} ran there; "
        + (f"its projects: {listed}" if known else "it stores no project (re-index it)")
    )
