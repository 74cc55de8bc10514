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
        description="Print a conversation, a turn, or a hit (its doc_id or unit_id from "
        "`convlab search --json`) with the docs around it; --budget adds the context "
        "resurrection brings back.",
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
        help="also the N docs (turns, or messages in dialogs) before and after the hit",
    )
    sh.add_argument("--budget", type=int, default=None, help="resurrection budget in tokens")
    sh.add_argument(
        "--policy",
        default="unit",
        choices=POLICIES.names(),
        help="what a hit brings back with --budget (%(default)s)",
    )
    return sh


def run(args: argparse.Namespace) -> int:
    """Print what ``args.target`` names, then the resurrected context when budgeted."""
    from convlab.store import Store

    if args.budget is not None and args.budget < 0:
        raise UsageError("--budget must not be negative")
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
        chunks, hit_docs = around(chunks, doc, args.around or 0, kind="turn")
        if args.around is None:
            hit_docs = set()
    elif args.around is not None:
        raise UsageError("--around needs a hit (a doc id or a unit id) or --turn")
    width = terminal_width()
    _print_docs(store, target.conversation, chunks, hit_docs, width)
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
    if units.height:
        docs = units["doc_ids"][0]
        conv = str(units["conversation_id"][0])
        doc = docs[0] if docs is not None and len(docs) else None
        return Target(conv, doc or schema.turn_id(conv, units["turn_index"][0]), text)
    m = _DOC.fullmatch(text)
    if m and convs.is_in([m["conv"]]).any():
        return Target(m["conv"], text)
    if m and store.conversation_ids(m["conv"]):  # a doc of a conversation named by its start
        conv = resolve_conversation(store, m["conv"])
        return Target(conv, f"{conv}:{m['kind']}{m['index']}")
    return Target(resolve_conversation(store, text))  # a unique start of a conversation id


def around(
    chunks: pl.DataFrame, doc: str, n: int, kind: str | None = None
) -> tuple[pl.DataFrame, set[str]]:
    """The chunks of ``doc`` and of the ``n`` docs of its kind before and after it.

    Args:
        chunks: the chunks of ``doc``'s conversation.
        doc: a turn id (``CONV:tN``) or a message id (``CONV:mN``).
        n: docs on each side.
        kind: ``"turn"`` or ``"message"``; by default the kind ``doc`` names.

    Returns:
        The chunks shown and the set of hit docs (``{doc}``).

    Raises:
        UsageError: ``doc`` has no chunk.
    """
    if kind is None:
        m = _DOC.fullmatch(doc)
        kind = "message" if m is not None and m["kind"] == "m" else "turn"
    key = schema.message_id_expr() if kind == "message" else schema.turn_id_expr()
    keyed = chunks.sort("position").with_columns(key.alias("_doc"))
    order = keyed["_doc"].unique(maintain_order=True).to_list()
    if doc not in order:
        raise UsageError(f"no {kind} {doc!r} with text in the store")
    i = order.index(doc)
    shown = order[max(0, i - n) : i + n + 1]
    return keyed.filter(pl.col("_doc").is_in(shown)).drop("_doc"), {doc}


def _print_docs(
    store: Store, conversation: str, chunks: pl.DataFrame, hit_docs: set[str], width: int
) -> None:
    """The conversation's header, then the chunks by turn and message; ``>`` marks the hit."""
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
    for (turn,), part in chunks.sort("position").group_by("turn_index", maintain_order=True):
        started = starts.get(turn)
        when = f" · {started:%Y-%m-%d %H:%M}" if started else ""
        mark = " (hit)" if schema.turn_id(conversation, turn) in hit_docs else ""
        print(f"== turn {turn}{when}{mark}")
        msg_w = len(str(part["message_index"].max()))
        for (msg, role), m in part.group_by("message_index", "role", maintain_order=True):
            hit = schema.message_id(conversation, msg) in hit_docs
            label = f"{'>' if hit else ' '} {role:<{role_w}}  #{msg:<{msg_w}}  "
            for line in wrapped(label, " ".join(m["text"].to_list()), width):
                print(line)


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
        units = units.filter(pl.col("doc_ids").list.contains(target.doc))
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
