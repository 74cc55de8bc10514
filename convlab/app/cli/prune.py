"""``convlab prune``: remove from the store the conversations the user names, and say which.

``convlab index`` never removes a conversation: one whose transcript went, shrank or was
rewritten stays, detached (``convlab stats`` counts them). ``prune`` removes every detached one
(``--detached``), those detached for a reason (``--reason gone``), or conversations by id
(``--conversation``), printing one line per conversation removed; ``--dry-run`` only prints.
"""

from __future__ import annotations

import argparse
import sys

from convlab.app.cli.options import add_store, resolve_conversation
from convlab.app.exits import EXIT_OK, UsageError

NAME = "prune"
EXAMPLE = "convlab prune --store ~/.convlab/store --detached --dry-run"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``prune`` to the subcommands ``sub``."""
    from convlab.store.prune import REASONS

    pr: argparse.ArgumentParser = sub.add_parser(
        NAME,
        help="remove conversations from the store (detached ones, or by id)",
        description="Remove the conversations named from the store and print each one removed. "
        "`convlab index` keeps conversations whose transcripts went, shrank or were rewritten "
        "(detached); this is how they go.",
    )
    add_store(pr)
    pr.add_argument("--detached", action="store_true", help="every detached conversation")
    pr.add_argument(
        "--reason",
        action="append",
        default=[],
        choices=REASONS,
        help="the detached conversations whose transcript went ('gone'), shrank, or that are an "
        "earlier version of a rewritten one ('rewritten'); repeatable",
    )
    pr.add_argument(
        "--conversation",
        action="append",
        default=[],
        metavar="ID",
        help="a conversation by its id or a unique start of it; repeatable",
    )
    pr.add_argument("--dry-run", action="store_true", help="print what would go, remove nothing")
    pr.add_argument("--wait", action="store_true", help="wait for another indexer to finish")
    return pr


def run(args: argparse.Namespace) -> int:
    """Remove the conversations ``args`` names from ``args.store``; print each one."""
    from convlab.app.cli.options import embedder_for_vectors
    from convlab.store import Store
    from convlab.store.prune import prune, select

    if not (args.detached or args.reason or args.conversation):
        raise UsageError("name what to remove: --detached, --reason REASON or --conversation ID")
    store = Store(args.store)
    manifest = store.manifest()  # a missing or damaged store fails here, in one line
    ids = [resolve_conversation(store, c) for c in args.conversation]
    chosen = select(manifest, detached=args.detached, reasons=args.reason, conversations=ids)
    titles = dict(store.frame("conversations").select("conversation_id", "title").iter_rows())
    verb = "would remove" if args.dry_run else "removed"
    if not args.dry_run and chosen:
        embedder = embedder_for_vectors(manifest, None, None)
        prune(store, chosen, embedder=embedder, wait=args.wait)
    for c in chosen:
        d = manifest.detached.get(c)
        why = f"detached: {d.reason}, {d.source}" if d else "attached"
        print(f"{verb} {c} ({titles.get(c) or 'untitled'}; {why})")
    counts = store.manifest().counts
    print(
        f"{verb} {len(chosen)} conversations; the store holds {counts.get('conversations', 0)} "
        f"conversations, {counts.get('turns', 0)} turns",
        flush=True,
    )
    if not chosen:
        print("convlab prune: nothing matched; nothing was removed", file=sys.stderr)
    return EXIT_OK
