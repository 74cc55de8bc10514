"""History that outlives its files: what an update does with a conversation whose file changed.

A store mirrors no folder: it keeps what it was given. Per conversation read before from a file
that changed or went, an update compares the messages it stored with those the file holds now,
by each message's content digest (:func:`message_digests`, kept in the store's ``messages``
frame as ``digest``):

- **gone**: the file vanished, is no longer a regular file (a FIFO, a device, a symlink to
  elsewhere) or no longer holds the conversation: its rows stay, marked detached;
- **grew**: the stored messages are the first messages of the new ones (an append): the
  conversation is rebuilt from the file, every old turn among the new;
- **shrank**: the file's messages are the first of the stored ones (a truncation, even in the
  middle of a line): the stored rows stay whole, marked detached;
- **rewritten**: neither: the stored rows stay as an earlier version, renamed
  ``<id>~<n>`` (:func:`version_id`) and marked detached, and the file's content is added as
  the conversation itself.

Detached conversations (:class:`convlab.store.format.Detached`) are searched like the others;
``convlab stats`` counts them and ``convlab prune`` removes them when asked.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import polars as pl

from convlab.loaders import Corpus
from convlab.store.format import Detached

__all__ = [
    "DIGEST",
    "Changes",
    "classify",
    "fingerprints",
    "message_digests",
    "renamed",
    "version_id",
    "with_digests",
]

DIGEST = "digest"
"""The column of the store's ``messages`` frame holding each message's content digest."""
_ID_PREFIXED = ("message_id", "turn_id", "chunk_id", "target_chunk_id")
_ID_LISTS = ("doc_ids", "chunk_ids")


def message_digests(corpus: Corpus) -> pl.DataFrame:
    """Each message's content digest: its role and its blocks (type, text, tool), in order.

    Where a message sits in its file (path, line) and when it was sent are not part of it, so
    a file moved or rotated holds the same messages.

    Returns:
        ``conversation_id``, ``message_index``, ``digest`` (hex), sorted.
    """
    msgs = corpus.messages.select("conversation_id", "message_index", "role", "is_real_user")
    blocks = corpus.blocks.select(
        "conversation_id",
        "message_index",
        "block_index",
        "block_type",
        "text",
        "tool_name",
        "tool_input",
    )
    joined = msgs.join(blocks, on=["conversation_id", "message_index"], how="left").sort(
        "conversation_id", "message_index", "block_index", nulls_last=False
    )
    fields = ["role", "is_real_user", "block_type", "text", "tool_name", "tool_input"]
    rows = joined.select(
        "conversation_id",
        "message_index",
        pl.concat_str(
            [pl.col(c).cast(pl.String).fill_null("\x00") for c in fields], separator="\x1f"
        ).alias("row"),
    )
    out: dict[str, list[object]] = {"conversation_id": [], "message_index": [], DIGEST: []}
    for (conv, index), part in rows.group_by(
        "conversation_id", "message_index", maintain_order=True
    ):
        h = hashlib.sha256()
        for r in part["row"]:
            h.update(r.encode("utf-8", "surrogatepass"))
            h.update(b"\x1e")
        out["conversation_id"].append(conv)
        out["message_index"].append(index)
        out[DIGEST].append(h.hexdigest()[:32])
    return pl.DataFrame(
        out, schema={"conversation_id": pl.String, "message_index": pl.Int32, DIGEST: pl.String}
    )


def fingerprints(corpus: Corpus, digests: pl.DataFrame) -> dict[str, str]:
    """A content hash per conversation: the SHA-256 of its messages' digests, in order."""
    out: dict[str, str] = {}
    for (conv,), part in digests.sort("conversation_id", "message_index").group_by(
        "conversation_id", maintain_order=True
    ):
        out[str(conv)] = hashlib.sha256("".join(part[DIGEST]).encode()).hexdigest()
    for conv in corpus.conversations["conversation_id"]:
        out.setdefault(conv, hashlib.sha256(b"").hexdigest())
    return out


def with_digests(messages: pl.DataFrame, digests: pl.DataFrame) -> pl.DataFrame:
    """The corpus's ``messages`` with the :data:`DIGEST` column the store keeps."""
    return messages.join(digests, on=["conversation_id", "message_index"], how="left")


def _sequences(digests: pl.DataFrame, convs: Iterable[str]) -> dict[str, list[str]]:
    """Per conversation in ``convs``, its messages' digests in order."""
    wanted = sorted(convs)
    part = digests.filter(pl.col("conversation_id").is_in(wanted)).sort(
        "conversation_id", "message_index"
    )
    out: dict[str, list[str]] = {c: [] for c in wanted}
    for (conv,), rows in part.group_by("conversation_id", maintain_order=True):
        out[str(conv)] = rows[DIGEST].to_list()
    return out


def version_id(conversation: str, taken: Iterable[str]) -> str:
    """The id of an earlier version of ``conversation``: ``<id>~<n>``, n one past the last.

    Example:
        >>> version_id("s1", ["s1", "s1~1", "s2~4"])
        's1~2'
    """
    pattern = re.compile(re.escape(conversation) + r"~(\d+)$")
    last = max((int(m.group(1)) for t in taken if (m := pattern.match(t))), default=0)
    return f"{conversation}~{last + 1}"


@dataclass(slots=True)
class Changes:
    """What an update does with the conversations it read before.

    Attributes:
        build: conversations to build from the files (new, grown or rewritten).
        drop: conversations whose stored rows are replaced (grown, rewritten).
        rename: stored rows kept under a new id (an earlier version of a rewritten one).
        detached: the store's detached conversations after the update.
        newly_detached: how many were detached by this update.
    """

    build: set[str] = field(default_factory=set)
    drop: set[str] = field(default_factory=set)
    rename: dict[str, str] = field(default_factory=dict)
    detached: dict[str, Detached] = field(default_factory=dict)
    newly_detached: int = 0


def classify(
    *,
    old_prints: Mapping[str, str],
    new_prints: Mapping[str, str],
    stale: set[str],
    old_digests: pl.DataFrame,
    new_digests: pl.DataFrame,
    detached: Mapping[str, Detached],
    sources: Mapping[str, str],
) -> Changes:
    """Decide per conversation whether it is added, rebuilt, kept detached or versioned.

    Args:
        old_prints: the stored conversations' fingerprints.
        new_prints: those of the conversations read now.
        stale: the stored conversations whose files changed or went.
        old_digests: the stored messages' digests (of at least the changed conversations).
        new_digests: the digests of the messages read now.
        detached: the store's detached conversations before the update.
        sources: per stored conversation, its source file (for the detached record).
    """
    now = time.time()
    out = Changes(detached=dict(detached))
    changed = {c for c in new_prints if c in old_prints and new_prints[c] != old_prints[c]}
    out.build = {c for c in new_prints if c not in old_prints} | changed
    for c in new_prints:
        if c not in changed:
            out.detached.pop(c, None)  # read again as stored: attached
    before, after = _sequences(old_digests, changed), _sequences(new_digests, changed)
    for c in sorted(changed):
        old, new = before[c], after[c]
        if new[: len(old)] == old:  # grew (or the same messages): nothing is lost
            out.drop.add(c)
            out.detached.pop(c, None)
        elif len(new) < len(old) and old[: len(new)] == new:  # shrank: keep the stored whole
            out.build.discard(c)
            out.newly_detached += c not in out.detached
            out.detached[c] = Detached(source=sources.get(c, ""), reason="shrank", since=now)
        else:  # rewritten: the stored rows become an earlier version
            earlier = version_id(c, [*old_prints, *out.rename.values()])
            out.drop.add(c)
            out.rename[c] = earlier
            out.detached.pop(c, None)
            out.newly_detached += 1
            out.detached[earlier] = Detached(
                source=sources.get(c, ""), reason="rewritten", since=now, of=c
            )
    for c in sorted(stale - set(new_prints)):
        if c not in out.detached or out.detached[c].reason != "gone":
            out.newly_detached += c not in out.detached
            out.detached[c] = Detached(source=sources.get(c, ""), reason="gone", since=now)
    return out


def renamed(frame: pl.DataFrame, renames: Mapping[str, str]) -> pl.DataFrame:
    """``frame`` with the rows of each conversation in ``renames`` under its new id.

    Every id column is renamed: ``conversation_id``, the ids that begin with it (messages,
    turns, chunks), the lists of them (``doc_ids``, ``chunk_ids``) and ``unit_id``
    (``<strategy>:<conversation>:...``).
    """
    for old, new in renames.items():
        mine = pl.col("conversation_id") == old
        n = len(old)
        exprs = []
        for c in frame.columns:
            col = pl.col(c)
            if c == "conversation_id":
                expr = pl.lit(new)
            elif c in _ID_PREFIXED:
                expr = pl.lit(new) + col.str.slice(n)
            elif c in _ID_LISTS:
                expr = col.list.eval(pl.lit(new) + pl.element().str.slice(n))
            elif c == "unit_id":
                expr = col.str.replace(f":{old}:", f":{new}:", literal=True, n=1)
            else:
                continue
            exprs.append(pl.when(mine).then(expr).otherwise(col).alias(c))
        frame = frame.with_columns(exprs)
    return frame
