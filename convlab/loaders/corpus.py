"""The loaded corpus: conversations, messages and blocks as frames, and what the load skipped.

:class:`Corpus` is what :func:`convlab.load` returns and every later stage reads;
:class:`LoadReport` says which files were read and which records were skipped (file, line and
reason), so nothing is dropped silently. :func:`merge_parts` joins the corpora of a parallel load
in file order, as one serial load would have built them; :func:`titled_by_first_prompt` gives
an untitled chat its first prompt as a title.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from convlab import schema

__all__ = [
    "TITLE_CHARS",
    "Corpus",
    "LoadReport",
    "corpus_from_frames",
    "corpus_from_ipc",
    "merge_parts",
    "part_frames",
    "prompt_titles",
    "title_of",
    "titled_by_first_prompt",
]

TITLE_CHARS = 80
"""A title made of a conversation's first prompt is clipped to this many characters."""


@dataclass(frozen=True, slots=True)
class LoadReport:
    """What a load read and what it skipped.

    Attributes:
        files: one row per file seen (:data:`convlab.schema.FILES`).
        skipped: one row per record or file skipped, with file, line and reason
            (:data:`convlab.schema.SKIPPED`).
    """

    files: pl.DataFrame
    skipped: pl.DataFrame

    @property
    def n_skipped(self) -> int:
        """How many records or files were skipped."""
        return self.skipped.height

    def summary(self) -> str:
        """One line: files, lines and records read, records skipped."""
        f = self.files
        return (
            f"{f.height} files, {int(f['lines_read'].sum() or 0)} lines, "
            f"{int(f['records'].sum() or 0)} records read, {self.n_skipped} skipped"
        )


@dataclass(frozen=True, slots=True)
class Corpus:
    """A loaded set of conversations as polars frames.

    Attributes:
        conversations: :data:`convlab.schema.CONVERSATIONS`.
        messages: :data:`convlab.schema.MESSAGES`.
        blocks: :data:`convlab.schema.BLOCKS`.
        report: files read and records skipped.
        queries: labelled queries shipped with the data (LoCoMo's QA), else ``None``
            (:data:`convlab.schema.QUERIES`).
    """

    conversations: pl.DataFrame
    messages: pl.DataFrame
    blocks: pl.DataFrame
    report: LoadReport
    queries: pl.DataFrame | None = None

    def to_pandas(self) -> dict[str, Any]:
        """The frames as pandas DataFrames, by name."""
        out = {
            "conversations": self.conversations.to_pandas(),
            "messages": self.messages.to_pandas(),
            "blocks": self.blocks.to_pandas(),
            "files": self.report.files.to_pandas(),
            "skipped": self.report.skipped.to_pandas(),
        }
        if self.queries is not None:
            out["queries"] = self.queries.to_pandas()
        return out

    def __repr__(self) -> str:
        return (
            f"Corpus({self.conversations.height} conversations, {self.messages.height} messages, "
            f"{self.blocks.height} blocks; {self.report.summary()})"
        )

    def filter_conversations(self, conversation_ids: Iterable[str]) -> Corpus:
        """The corpus restricted to these conversations (the report is kept whole)."""
        ids = sorted(set(conversation_ids))
        keep = pl.col("conversation_id").is_in(ids)
        return Corpus(
            conversations=self.conversations.filter(keep),
            messages=self.messages.filter(keep),
            blocks=self.blocks.filter(keep),
            report=self.report,
            queries=None if self.queries is None else self.queries.filter(keep),
        )

    def with_doc_kind(self, doc_kind: str) -> Corpus:
        """The corpus with every conversation's docs of ``doc_kind`` (one of ``DOC_KINDS``).

        A labelled set judged per message (a long coding session holds few turns and hundreds
        of messages) makes its chats' docs messages; nothing else changes.

        Raises:
            ValueError: ``doc_kind`` is not one of :data:`convlab.schema.DOC_KINDS`.
        """
        if doc_kind not in schema.DOC_KINDS:
            raise ValueError(f"unknown doc kind {doc_kind!r}; valid: {', '.join(schema.DOC_KINDS)}")
        kinds = self.conversations.with_columns(pl.lit(doc_kind).alias("doc_kind"))
        return replace(self, conversations=kinds)

    @staticmethod
    def concat(corpora: Sequence[Corpus]) -> Corpus:
        """Join corpora loaded separately into one (conversation ids must not collide)."""
        if not corpora:
            raise ValueError("nothing to concatenate")
        queries = [c.queries for c in corpora if c.queries is not None]
        out = Corpus(
            conversations=pl.concat([c.conversations for c in corpora]),
            messages=pl.concat([c.messages for c in corpora]),
            blocks=pl.concat([c.blocks for c in corpora]),
            report=LoadReport(
                files=pl.concat([c.report.files for c in corpora]),
                skipped=pl.concat([c.report.skipped for c in corpora]),
            ),
            queries=pl.concat(queries) if queries else None,
        )
        dup = out.conversations["conversation_id"].is_duplicated()
        if dup.any():
            ids = out.conversations.filter(dup)["conversation_id"].unique().to_list()
            raise ValueError(f"conversation ids loaded twice: {ids[:5]}")
        return out


def merge_parts(parts: Sequence[Corpus]) -> Corpus:
    """Corpora of consecutive chunks of one file list, in order, as one serial load builds them.

    A conversation whose files fell into two chunks continues: its messages in later chunks are
    renumbered after those of earlier chunks, its title is the first one given, its times span
    both. Everything else is concatenated in order.
    """
    if not parts:
        raise ValueError("nothing to merge")
    if len(parts) == 1:
        return parts[0]
    messages, blocks = [], []
    so_far: dict[str, int] = {}  # conversation -> messages in earlier chunks
    for part in parts:
        counts = dict(part.messages.group_by("conversation_id").len().iter_rows())
        offsets = {c: so_far[c] for c in counts if so_far.get(c)}
        m, b = part.messages, part.blocks
        if offsets:
            shift = (
                pl.col("message_index")
                + pl.col("conversation_id").replace_strict(
                    offsets, default=0, return_dtype=pl.Int32
                )
            ).cast(pl.Int32)
            m = m.with_columns(shift).with_columns(schema.message_id_expr())
            b = b.with_columns(shift)
        for c, n in counts.items():
            so_far[c] = so_far.get(c, 0) + n
        messages.append(m)
        blocks.append(b)
    conversations = pl.concat([p.conversations for p in parts])
    if conversations["conversation_id"].is_duplicated().any():
        conversations = (
            conversations.group_by("conversation_id", maintain_order=True)
            .agg(
                pl.col("title").filter(pl.col("title") != "").first(),
                *(
                    pl.col(c).first()
                    for c in (
                        "source_format",
                        "source_path",
                        "kind",
                        "doc_kind",
                        "parent_conversation_id",
                    )
                ),
                *(pl.col(c).drop_nulls().first() for c in ("agent_id", "project")),
                pl.col("started_at").min(),
                pl.col("ended_at").max(),
            )
            .select(list(schema.CONVERSATIONS))
        )
    queries = [p.queries for p in parts if p.queries is not None]
    return Corpus(
        conversations=conversations,
        messages=pl.concat(messages),
        blocks=pl.concat(blocks),
        report=LoadReport(
            files=pl.concat([p.report.files for p in parts]),
            skipped=pl.concat([p.report.skipped for p in parts]),
        ),
        queries=pl.concat(queries) if queries else None,
    )


def title_of(prompt: str, chars: int = TITLE_CHARS) -> str:
    r"""A title made of a prompt: its whitespace collapsed, clipped to ``chars`` with an ellipsis.

    Example:
        >>> title_of("fix the\n  flaky   test", 12)
        'fix the fla…'
    """
    text = " ".join(prompt.split())
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


def prompt_titles(corpus: Corpus, chars: int = TITLE_CHARS) -> dict[str, str]:
    """Each chat's title made of its first real prompt (:func:`title_of`); none for a dialog.

    Example:
        >>> prompt_titles(convlab.load("data/sample/transcripts"))  # doctest: +SKIP
    """
    chats = corpus.conversations.filter(pl.col("kind") == "chat")["conversation_id"].to_list()
    first = (
        corpus.messages.filter(pl.col("is_real_user") & pl.col("conversation_id").is_in(chats))
        .group_by("conversation_id")
        .agg(pl.col("message_index").min())
    )
    texts = (
        corpus.blocks.filter(pl.col("block_type") == "text")
        .join(first, on=["conversation_id", "message_index"])
        .sort("block_index")
        .group_by("conversation_id")
        .agg(pl.col("text").str.join(" "))
    )
    titles = {c: title_of(t, chars) for c, t in texts.iter_rows()}
    return {c: t for c, t in titles.items() if t}


def titled_by_first_prompt(corpus: Corpus, chars: int = TITLE_CHARS) -> Corpus:
    """The corpus with every untitled chat titled by its first real prompt (:func:`title_of`).

    Agent histories rarely carry a title (Claude Code 2.x writes no ``summary`` record, Codex
    none at all), and a bare session id says nothing in a list of hits. Dialogs keep theirs
    (their first utterance is not a topic); a chat without a real prompt stays untitled.
    Redaction makes these titles again from the redacted prompts
    (:func:`convlab.pipeline.redact.redact_corpus`): clipping can cut a secret short of what
    its rule recognises.
    """
    if corpus.conversations.filter(pl.col("title").is_null()).height == 0:
        return corpus
    titles = prompt_titles(corpus, chars)
    if not titles:
        return corpus
    made = pl.col("conversation_id").replace_strict(titles, default=None, return_dtype=pl.String)
    filled = corpus.conversations.with_columns(pl.coalesce("title", made).alias("title"))
    return replace(corpus, conversations=filled)


def part_frames(corpus: Corpus) -> dict[str, pl.DataFrame]:
    """A chunk's corpus as frames by name, as a parallel load ships it back (queries if any)."""
    frames = {
        "conversations": corpus.conversations,
        "messages": corpus.messages,
        "blocks": corpus.blocks,
        "files": corpus.report.files,
        "skipped": corpus.report.skipped,
    }
    if corpus.queries is not None:
        frames["queries"] = corpus.queries
    return frames


def corpus_from_frames(frames: dict[str, pl.DataFrame]) -> Corpus:
    """The corpus :func:`part_frames` took apart."""
    return Corpus(
        conversations=frames["conversations"],
        messages=frames["messages"],
        blocks=frames["blocks"],
        report=LoadReport(files=frames["files"], skipped=frames["skipped"]),
        queries=frames.get("queries"),
    )


def corpus_from_ipc(blobs: dict[str, bytes]) -> Corpus:
    """The corpus :func:`convlab.loaders.registry.load_chunk_ipc` returned (Arrow IPC bytes)."""
    return corpus_from_frames({name: pl.read_ipc(blob) for name, blob in blobs.items()})
