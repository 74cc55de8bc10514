"""``convlab show``: print a conversation (or one turn), optionally with resurrected context."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import polars as pl

from convlab.app.cli.options import add_store, resolve_conversation
from convlab.app.display import clip, printable, short_path, terminal_width, wrapped
from convlab.app.exits import EXIT_OK, UsageError

if TYPE_CHECKING:
    from convlab.store import Store

NAME = "show"
EXAMPLE = "convlab show 3f2a9c1e-SESSION --turn 3 --budget 512"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``show`` to the subcommands ``sub``."""
    sh: argparse.ArgumentParser = sub.add_parser(
        NAME, help="print a turn with its resurrected context", description="Print a turn."
    )
    sh.add_argument("conversation", help="a conversation id, or a unique start of it")
    add_store(sh)
    sh.add_argument("--turn", type=int, default=None, help="turn index (default: all turns)")
    sh.add_argument("--budget", type=int, default=None, help="resurrection budget in tokens")
    return sh


def run(args: argparse.Namespace) -> int:
    """Print the turns of ``args.conversation``, then the resurrected context when budgeted."""
    from convlab.store import Store

    if args.budget is not None and args.budget < 0:
        raise UsageError("--budget must not be negative")
    store = Store(args.store)
    args.conversation = resolve_conversation(store, args.conversation)
    chunks = store.frame("sentences").filter(pl.col("conversation_id") == args.conversation)
    if chunks.height == 0:
        raise UsageError(f"no conversation {args.conversation!r} in {store.directory}")
    if args.turn is not None:
        chunks = chunks.filter(pl.col("turn_index") == args.turn)
        if chunks.height == 0:
            raise UsageError(f"conversation {args.conversation!r} has no turn {args.turn}")
    width = terminal_width()
    conv = store.frame("conversations").filter(pl.col("conversation_id") == args.conversation)
    title = conv["title"][0] if conv.height else None
    print(clip(printable(f"{args.conversation}: {title}" if title else args.conversation), width))
    if conv.height and conv["source_path"][0]:
        print(f"source: {short_path(printable(conv['source_path'][0]), width - 8)}")
    for label, column in (("project", "project"), ("sub-agent of", "parent_id")):
        if conv.height and column in conv.columns and conv[column][0]:
            print(clip(printable(f"{label}: {conv[column][0]}"), width))
    starts = dict(
        store.frame("turns")
        .filter(pl.col("conversation_id") == args.conversation)
        .select("turn_index", "started_at")
        .iter_rows()
    )
    role_w = max(len(r) for r in chunks["role"].unique().to_list())
    for (turn,), part in chunks.sort("position").group_by("turn_index", maintain_order=True):
        started = starts.get(turn)
        when = f" · {started:%Y-%m-%d %H:%M}" if started else ""
        print(f"== turn {turn}{when}")
        msg_w = len(str(part["message_index"].max()))
        for (msg, role), m in part.group_by("message_index", "role", maintain_order=True):
            label = f"  {role:<{role_w}}  #{msg:<{msg_w}}  "
            for line in wrapped(label, " ".join(m["text"].to_list()), width):
                print(line)
    if args.budget is not None:
        _print_resurrected(store, args, role_w, width)
    return EXIT_OK


def _print_resurrected(store: Store, args: argparse.Namespace, role_w: int, width: int) -> None:
    """The context that ``resurrect`` brings back for the shown units, within ``args.budget``."""
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
