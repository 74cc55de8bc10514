"""``convlab show``: print a conversation, a turn or a hit with its neighbours, and its context."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from convlab import schema
from convlab.app.cli.options import add_store, resolve_conversation
from convlab.app.exits import EXIT_OK, UsageError
from convlab.app.text import clip, printable, short_path, terminal_width, wrapped
from convlab.defaults import POLICY

if TYPE_CHECKING:
    from convlab.store import Store

NAME = "show"
EXAMPLE = "convlab show conv-26:m12 --around 2 --budget 512 --store ~/.convlab/store"

_DOC = re.compile(r"(?P<conv>.+):(?P<kind>[tm])(?P<index>\d+)")


@dataclass(frozen=True, slots=True)
class Target:
    """What ``show`` was asked for: a conversation, and in it maybe a doc or a hit's unit."""

    conversation: str
    doc: str | None = None  # a turn id or a message id
    unit: str | None = None  # a hit's unit_id


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``show`` to the subcommands ``sub``."""
    from convlab.resurrection import POLICIES

    sh: argparse.ArgumentParser = sub.add_parser(
        NAME,
        help="print a conversation, a turn or a hit with its neighbours and context",
        description="Print a conversation, a turn, a message or a hit (its doc_id or unit_id "
        "from `convlab search --json`) with the messages around it, the hit's file:line and "
        "long tool output folded; --budget adds the context resurrection brings back.",
    )
    sh.add_argument(
        "target",
        metavar="TARGET",
        help="a conversation id (or a unique start of it), a doc id or a unit id",
    )
    add_store(sh)
    sh.add_argument("--turn", type=int, default=None, help="turn index (default: all turns)")
    sh.add_argument(
        "--around",
        type=int,
        default=None,
        metavar="N",
        help="also the N messages before and after the hit (a turn: its first and last)",
    )
    sh.add_argument(
        "--full",
        action="store_true",
        help=f"print long tool output whole (default: its first {FOLD_LINES} lines)",
    )
    sh.add_argument("--budget", type=int, default=None, help="resurrection budget in tokens")
    sh.add_argument(
        "--policy",
        default=POLICY,
        choices=POLICIES.names(),
        help="what a hit brings back with --budget (%(default)s)",
    )
    return sh


def run(args: argparse.Namespace) -> int:
    """Print what ``args.target`` names, then the resurrected context when budgeted."""
    from convlab.store import Store

    if args.budget is not None and args.budget < 1:
        raise UsageError("--budget must be at least 1 token")
    if args.around is not None and args.around < 0:
        raise UsageError("--around must not be negative")
    store = Store(args.store)
    target = resolve(store, args.target)
    chunks = store.frame("chunks").filter(pl.col("conversation_id") == target.conversation)
    if chunks.height == 0:
        raise UsageError(f"no conversation {target.conversation!r} in {store.directory}")
    hit_docs: set[str] = set()
    if target.doc is not None:
        chunks, hit_docs = around(chunks, target.doc, args.around or 0)
    elif args.turn is not None:
        doc = schema.turn_id(target.conversation, args.turn)
        if not chunks.filter(pl.col("turn_index") == args.turn).height:
            raise UsageError(f"conversation {target.conversation!r} has no turn {args.turn}")
        chunks, hit_docs = around(chunks, doc, args.around or 0)
        if args.around is None:
            hit_docs = set()
    elif args.around is not None:
        raise UsageError("--around needs a hit (a doc id or a unit id) or --turn")
    width = terminal_width()
    _print_docs(store, target.conversation, chunks, hit_docs, width, fold=not args.full)
    if args.budget is not None:
        role_w = max(len(r) for r in chunks["role"].unique().to_list())
        _print_resurrected(store, target, args, role_w, width)
    return EXIT_OK


def resolve(store: Store, text: str) -> Target:
    """The conversation, doc or unit ``text`` names in ``store``.

    Raises:
        UsageError: nothing of that name in the store, or a start shared by several
            conversations.
    """
    convs = store.frame("conversations")["conversation_id"]
    if convs.is_in([text]).any():
        return Target(text)
    try:
        units = store.frame("units").filter(pl.col("unit_id") == text)
    except (FileNotFoundError, ValueError):  # a store that keeps its units otherwise
        units = pl.DataFrame()
    if units.height:  # a hit's unit: its message (its target's)
        conv = str(units["conversation_id"][0])
        return Target(conv, schema.message_id(conv, int(units["message_index"][0])), text)
    m = _DOC.fullmatch(text)
    if m and convs.is_in([m["conv"]]).any():
        return Target(m["conv"], text)
    if m and store.conversation_ids(m["conv"]):  # a doc of a conversation named by its start
        conv = resolve_conversation(store, m["conv"])
        return Target(conv, f"{conv}:{m['kind']}{m['index']}")
    return Target(resolve_conversation(store, text))  # a unique start of a conversation id


def around(chunks: pl.DataFrame, doc: str, n: int) -> tuple[pl.DataFrame, set[str]]:
    """The chunks of ``doc`` and of the ``n`` messages before and after it.

    Messages, not turns: an agent's turn can hold a whole session.

    Args:
        chunks: the chunks of ``doc``'s conversation.
        doc: a turn id (``CONV:tN``: its messages) or a message id (``CONV:mN``).
        n: messages on each side.

    Returns:
        The chunks shown and the set of hit docs (``{doc}``).

    Raises:
        UsageError: ``doc`` has no chunk.
    """
    m = _DOC.fullmatch(doc)
    turn = m is None or m["kind"] == "t"
    keyed = chunks.sort("position").with_columns(
        schema.message_id_expr().alias("_msg"), schema.turn_id_expr().alias("_turn")
    )
    order = keyed["_msg"].unique(maintain_order=True).to_list()
    hit = keyed.filter(pl.col("_turn" if turn else "_msg") == doc)["_msg"].unique(
        maintain_order=True
    )
    if hit.is_empty():
        raise UsageError(f"no {'turn' if turn else 'message'} {doc!r} with text in the store")
    first, last = order.index(hit[0]), order.index(hit[-1])
    shown = order[max(0, first - n) : last + n + 1]
    return keyed.filter(pl.col("_msg").is_in(shown)).drop("_msg", "_turn"), {doc}


FOLD_LINES = 12
"""Lines of a long tool output ``show`` prints (``--full``: all)."""


def _print_docs(
    store: Store,
    conversation: str,
    chunks: pl.DataFrame,
    hit_docs: set[str],
    width: int,
    *,
    fold: bool = True,
) -> None:
    """The conversation's header, then the chunks by turn and message; ``>`` marks the hit.

    A hit message is followed by its file and line (``at:``); a tool output longer than
    :data:`FOLD_LINES` lines is folded to them, with a count of what was left out.
    """
    conv = store.frame("conversations").filter(pl.col("conversation_id") == conversation)
    title = conv["title"][0] if conv.height else None
    print(clip(printable(f"{conversation}: {title}" if title else conversation), width))
    if conv.height and conv["source_path"][0]:
        print(f"source: {short_path(printable(conv['source_path'][0]), width - 8)}")
    for label, column in (("project", "project"), ("sub-agent of", "parent_conversation_id")):
        if conv.height and column in conv.columns and conv[column][0]:
            print(clip(printable(f"{label}: {conv[column][0]}"), width))
    starts = dict(
        store.frame("turns")
        .filter(pl.col("conversation_id") == conversation)
        .select("turn_index", "started_at")
        .iter_rows()
    )
    role_w = max(len(r) for r in chunks["role"].unique().to_list())
    places = _places(store, conversation, hit_docs)
    for (turn,), part in chunks.sort("position").group_by("turn_index", maintain_order=True):
        started = starts.get(turn)
        when = f" · {started:%Y-%m-%d %H:%M}" if started else ""
        mark = " (hit)" if schema.turn_id(conversation, turn) in hit_docs else ""
        print(f"== turn {turn}{when}{mark}")
        msg_w = len(str(part["message_index"].max()))
        for (msg, role), m in part.group_by("message_index", "role", maintain_order=True):
            hit = schema.message_id(conversation, msg) in hit_docs
            label = f"{'>' if hit else ' '} {role:<{role_w}}  #{msg:<{msg_w}}  "
            lines = wrapped(label, " ".join(m["text"].to_list()), width)
            if fold and role == "tool":
                lines = folded(lines, " " * len(label))
            for line in lines:
                print(line)
            if hit and msg in places:
                path, at = places[msg]
                line = f":{at}" if at else ""
                room = max(20, width - len(label) - 4 - len(line))
                print(f"{' ' * len(label)}at: {short_path(printable(path), room)}{line}")


def folded(lines: list[str], indent: str) -> list[str]:
    """The first :data:`FOLD_LINES` of ``lines``, then one line counting what was left out.

    Example:
        >>> folded([f"l{i}" for i in range(14)], "  ")[-1]
        '  [… 2 more lines (6 characters) folded; --full prints them]'
    """
    if len(lines) <= FOLD_LINES:
        return lines
    left = lines[FOLD_LINES:]
    chars = sum(len(line.strip()) for line in left)
    return [
        *lines[:FOLD_LINES],
        f"{indent}[… {len(left)} more lines ({chars:,} characters) folded; --full prints them]",
    ]


def _places(store: Store, conversation: str, hit_docs: set[str]) -> dict[int, tuple[str, int]]:
    """The file and line of each hit message (none: a store that keeps no messages)."""
    hits = [int(d.rsplit(":m", 1)[1]) for d in hit_docs if _DOC.fullmatch(d) and ":m" in d]
    if not hits:
        return {}
    try:
        messages = store.frame("messages")
    except (FileNotFoundError, KeyError, ValueError):
        return {}
    found = messages.filter(
        (pl.col("conversation_id") == conversation) & pl.col("message_index").is_in(hits)
    )
    return {
        int(m): (str(p), int(line) if line is not None else 0)
        for m, p, line in found.select("message_index", "source_path", "source_line").iter_rows()
    }


def _print_resurrected(
    store: Store, target: Target, args: argparse.Namespace, role_w: int, width: int
) -> None:
    """The context resurrection brings back within ``args.budget``.

    For the hit's unit when a unit was named, else for the units of the doc or turn named.
    """
    from convlab.resurrection import resurrect

    units = store.frame("units").filter(pl.col("conversation_id") == target.conversation)
    if target.unit is not None:
        units = units.filter(pl.col("unit_id") == target.unit)
    elif target.doc is not None:
        m = _DOC.fullmatch(target.doc)
        mine = pl.col("doc_ids").list.contains(target.doc)
        if m is not None and m["kind"] == "m":  # a message of a chat: the units it targets
            mine |= pl.col("message_index") == int(m["index"])
        units = units.filter(mine)
    elif args.turn is not None:
        units = units.filter(pl.col("turn_index") == args.turn)
    res = resurrect(
        units["unit_id"],
        args.budget,
        units=units,
        chunks=store.frame("chunks"),
        policy=args.policy,
    )
    print(f"== resurrected context: {res.tokens_used}/{args.budget} tokens (* = a target)")
    for r in res.context.iter_rows(named=True):
        mark = "*" if r["is_target"] else " "
        label = f"{mark} {r['role']:<{role_w}}  t{r['turn_index']}  "
        for line in wrapped(label, r["text"], width):
            print(line)
