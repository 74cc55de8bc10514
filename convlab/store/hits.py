"""Where each hit is: its title, its turn's question, and its match's message, file and line.

:func:`placed` adds to a system's hits (with their match, :func:`convlab.systems.match.
with_matches`) what a person or an agent needs to read and open them: the conversation's title,
the question of the hit's turn, when the turn started, the match's message (role and text, as
indexed) and the file and line that message was read from, the path as it was indexed. The
store's search returns hits placed (``Store.search``), and the command line, the MCP server and
the search panel describe them from these columns (:func:`convlab.app.display.describe_hits`).
"""

from __future__ import annotations

from typing import Protocol

import polars as pl

from convlab import schema

__all__ = ["PLACE_COLUMNS", "FrameSource", "matched_messages", "placed"]

PLACE_COLUMNS: schema.Schema = {
    "title": pl.String,  # the conversation's
    "question": pl.String,  # the user text of the hit's turn
    "started_at": schema.UTC_TIME,  # when the hit's turn started
    "match_role": pl.String,  # the match's message
    "match_text": pl.String,  # its text as indexed (its chunks, in order)
    "source_path": pl.String,  # the file the match's message was read from, as indexed
    "source_line": pl.Int32,  # its 1-based line there (None: a store without messages)
}
"""The columns :func:`placed` adds to hits."""


class FrameSource(Protocol):
    """Where :func:`placed` reads frames by name (a store, or the search panel's data).

    ``frame("messages")`` may raise ``FileNotFoundError`` or ``KeyError`` (a store written before
    messages were kept, a panel that holds none): hits then point to the conversation's file.
    """

    def frame(self, name: str) -> pl.DataFrame:
        """The frame called ``name`` (``conversations``, ``chunks``, ``turns``, ``messages``)."""
        ...


def placed(
    frames: FrameSource,
    hits: pl.DataFrame,
    query: str | None = None,
    roles: tuple[str, ...] | None = None,
) -> pl.DataFrame:
    """``hits`` with :data:`PLACE_COLUMNS`, read from ``frames`` for the hits' conversations.

    The match is the hit's ``match_message_index``, the target of its best unit (the hit's own
    message for hits without one), unless that message holds none of ``query``'s terms while
    another message of the unit does (a user prompt embedded with the answer's first sentence,
    say): then the unit's message holding the most distinct terms (:func:`matched_messages`).
    Each frame is cut to the hits' conversations before anything is grouped or joined, so the
    work per search follows the hits, not the size of the store. ``roles``: the search's role
    filter, which the match keeps to.
    """
    if "match_message_index" not in hits.columns:
        hits = hits.with_columns(pl.col("message_index").alias("match_message_index"))
    if "match_unit_id" not in hits.columns:
        hits = hits.with_columns(pl.col("unit_id").alias("match_unit_id"))
    if "match_chunk_ids" not in hits.columns:
        ids = pl.col("chunk_ids") if "chunk_ids" in hits.columns else pl.lit(None)
        hits = hits.with_columns(ids.cast(pl.List(pl.String)).alias("match_chunk_ids"))
    hit_convs = hits.select("conversation_id").unique()

    def of_hits(name: str) -> pl.DataFrame:
        return frames.frame(name).join(hit_convs, on="conversation_id", how="semi")

    convs = of_hits("conversations").select(
        "conversation_id", "title", pl.col("source_path").alias("_conversation_path")
    )
    chunks = of_hits("chunks").sort("position")
    if query:
        hits = hits.with_columns(
            pl.Series(
                "match_message_index",
                matched_messages(hits, chunks, query, roles),
                dtype=pl.Int32,
            )
        )
    questions = (
        chunks.filter(pl.col("role") == "user")
        .group_by("conversation_id", "turn_index", maintain_order=True)
        .agg(pl.col("text").str.join(" ").alias("question"))
    )
    said = chunks.group_by("conversation_id", "message_index", maintain_order=True).agg(
        pl.col("role").first().alias("match_role"), pl.col("text").str.join(" ").alias("match_text")
    )
    turns = of_hits("turns").select("conversation_id", "turn_index", "started_at")
    cols = ["conversation_id", "message_index", "source_path", "source_line"]
    try:
        messages = of_hits("messages").select(cols)
    except (FileNotFoundError, KeyError):  # no messages: hits keep the conversation's file
        messages = schema.empty(schema.MESSAGES).select(cols)
    out = (
        hits.drop([c for c in PLACE_COLUMNS if c in hits.columns])
        .join(convs, on="conversation_id", how="left")
        .join(questions, on=["conversation_id", "turn_index"], how="left")
        .join(turns, on=["conversation_id", "turn_index"], how="left")
        .join(
            said.rename({"message_index": "match_message_index"}),
            on=["conversation_id", "match_message_index"],
            how="left",
        )
        .join(
            messages.rename({"message_index": "match_message_index"}),
            on=["conversation_id", "match_message_index"],
            how="left",
        )
    )
    return out.with_columns(
        pl.col("source_path").fill_null(pl.col("_conversation_path")),
        pl.col("match_role").fill_null(pl.col("role")),
        pl.col("match_text").fill_null(pl.col("text")),
        pl.col("source_line").cast(pl.Int32),
    ).drop("_conversation_path")


def matched_messages(
    hits: pl.DataFrame, chunks: pl.DataFrame, query: str, roles: tuple[str, ...] | None = None
) -> list[int]:
    """Each hit's match message: its unit's target, or the unit's message that holds the terms.

    Terms are ``query``'s tokens as BM25 indexes them (:func:`convlab.index.bm25.tokenize`);
    without BM25's extra every hit keeps its target. Only messages of ``roles`` (None: any)
    are chosen instead of the target.
    """
    targets = [int(m) for m in hits["match_message_index"]]
    try:
        from convlab.index.bm25 import tokenize

        terms = set(tokenize([query])[0])
    except ImportError:
        return targets
    if not terms:
        return targets
    chunk_of = {
        c: (int(m), t)
        for c, m, t, r in chunks.select("chunk_id", "message_index", "text", "role").iter_rows()
        if roles is None or r in roles
    }
    out = []
    for target, ids in zip(targets, hits["match_chunk_ids"].to_list(), strict=True):
        said: dict[int, list[str]] = {}
        for c in ids or ():
            if c in chunk_of:
                said.setdefault(chunk_of[c][0], []).append(chunk_of[c][1])
        if len(said) < 2 or target not in said:
            out.append(target)
            continue
        found = dict(zip(said, tokenize([" ".join(t) for t in said.values()]), strict=True))
        held = {m: len(terms & set(found[m])) for m in said}
        if held.get(target, 0) or not any(held.values()):
            out.append(target)
        else:
            out.append(max(said, key=lambda m: (held[m], m == target, -m)))
    return out
