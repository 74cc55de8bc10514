"""Chunks: the kept text of every turn, split and counted with the model's tokenizer.

Splitting: prose is split into sentences by blingfire (a finite-state sentence breaker), line by
line, so lists and headings stay separate; fenced code blocks (```...```) are kept apart from
prose and split by lines, with consecutive lines packed together up to 64 tokens so that code
does not explode into one-token chunks. Any piece over
:data:`convlab.model.MAX_CONTENT_TOKENS`
(254) is cut at word boundaries, so every chunk fits the model alone. Token counts are exact
(content tokens, no [CLS]/[SEP]) and batched.

Ids: ``sentence_index`` counts the chunks of one role's part of a turn, so ``s0`` is that role's
S0 (its first chunk, the opening ``turn_pair`` pairs with); ``sentence_in_message`` counts
within a message; ``position`` orders the chunks of a conversation (the counters keep their
stored names). Every chunk carries its conversation's
``doc_kind`` (:data:`convlab.schema.DOC_KINDS`), so strategies and evaluation read what a doc is
from the data, never from a flag.
"""

from __future__ import annotations

import ctypes
import re

import blingfire
import polars as pl

from convlab import schema
from convlab.loaders.corpus import Corpus
from convlab.model import MAX_CONTENT_TOKENS
from convlab.pipeline.policy import ContentPolicy, policy_text
from convlab.pipeline.tokens import count_tokens, split_at_tokens
from convlab.pipeline.turns import message_turns

__all__ = ["chunks", "split_text"]

_FENCE = re.compile(r"```[^\n]*\n.*?(?:```|\Z)", re.DOTALL)
CODE_PACK_TOKENS = 64


def split_text(text: str) -> list[tuple[str, bool]]:
    """Split one block's text into ``(piece, is_code)`` in order (before token limits).

    Example:
        >>> split_text("Hi there. How are you?")
        [('Hi there.', False), ('How are you?', False)]
    """
    out: list[tuple[str, bool]] = []
    pos = 0
    for m in _FENCE.finditer(text):
        _prose(text[pos : m.start()], out)
        for line in m.group(0).splitlines():
            if line.strip():
                out.append((line.rstrip(), True))
        pos = m.end()
    _prose(text[pos:], out)
    return out


class _SentenceBreaker:
    """blingfire's ``TextToSentences`` with one reusable output buffer.

    ``blingfire.text_to_sentences`` allocates a fresh ctypes buffer per call, which costs more
    than the breaking itself for short lines (eval/bench_load.py profile: 14 of 30 us a call);
    this calls the same C function into a buffer that only grows. Same output. The buffer is
    shared: one breaker per process, not for threads that split text at the same time.
    """

    def __init__(self) -> None:
        self._fn = blingfire.blingfire.TextToSentences
        self._buf = ctypes.create_string_buffer(1 << 16)

    def __call__(self, text: str) -> str:
        data = text.encode("utf-8")
        need = 2 * len(data) + 16
        if need > len(self._buf):
            self._buf = ctypes.create_string_buffer(max(need, 2 * len(self._buf)))
        n = self._fn(data, len(data), self._buf, len(self._buf))
        if n == -1 or n > len(self._buf):  # as blingfire's wrapper: no sentences on error
            return ""
        # string_at copies the n - 1 bytes written; .raw would copy the whole buffer first
        return ctypes.string_at(self._buf, max(n - 1, 0)).decode("utf-8", "replace")


_break_sentences = _SentenceBreaker()


def _prose(text: str, out: list[tuple[str, bool]]) -> None:
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        for s in _break_sentences(line).split("\n"):
            s = s.strip()
            if s:
                out.append((s, False))


def _pack_code(pieces: list[tuple[str, bool]], counts: list[int]) -> list[tuple[str, int]]:
    """Pack consecutive code lines up to CODE_PACK_TOKENS; prose pieces pass through."""
    out: list[tuple[str, int]] = []
    buf: list[str] = []
    n = 0
    for (text, is_code), c in zip(pieces, counts, strict=True):
        if is_code and (not buf or n + c <= CODE_PACK_TOKENS):
            buf.append(text)
            n += c
            continue
        if buf:
            out.append(("\n".join(buf), n))
            buf, n = [], 0
        if is_code:
            buf, n = [text], c
        else:
            out.append((text, c))
    if buf:
        out.append(("\n".join(buf), n))
    return out


def _cut(texts: list[str]) -> tuple[list[int], list[str], list[int]]:
    """Each block's text cut into chunks: ``(block position, text, tokens)`` per chunk, in order.

    Every block is split into pieces (:func:`split_text`), code lines are packed per block
    (:func:`_pack_code`) and pieces over :data:`MAX_CONTENT_TOKENS` are cut at word boundaries.
    """
    # 1. split every block into pieces
    piece_text: list[str] = []
    piece_code: list[bool] = []
    piece_block: list[int] = []
    for i, text in enumerate(texts):
        for s, is_code in split_text(text):
            piece_text.append(s)
            piece_code.append(is_code)
            piece_block.append(i)
    counts = count_tokens(piece_text)

    # 2. pack code lines per block, cut oversize pieces at word boundaries
    chunk_text: list[str] = []
    chunk_tokens: list[int] = []
    chunk_block: list[int] = []
    start = 0
    n = len(piece_text)
    while start < n:
        end = start
        b = piece_block[start]
        while end < n and piece_block[end] == b:
            end += 1
        packed = _pack_code(
            list(zip(piece_text[start:end], piece_code[start:end], strict=True)),
            counts[start:end],
        )
        for text, c in packed:
            if c > MAX_CONTENT_TOKENS:
                parts = split_at_tokens(text, MAX_CONTENT_TOKENS)
                for p, pc in zip(parts, count_tokens(parts), strict=True):
                    chunk_text.append(p)
                    chunk_tokens.append(pc)
                    chunk_block.append(b)
            else:
                chunk_text.append(text)
                chunk_tokens.append(c)
                chunk_block.append(b)
        start = end
    return chunk_block, chunk_text, chunk_tokens


def chunks(corpus: Corpus, policy: ContentPolicy | None = None) -> pl.DataFrame:
    """One row per chunk of every turn (:data:`convlab.schema.CHUNKS`).

    Args:
        corpus: the loaded corpus.
        policy: what text each block contributes (default :class:`ContentPolicy`).

    Example:
        >>> c = chunks(convlab.load("data/sample"))  # doctest: +SKIP
        >>> c.filter(pl.col("sentence_index") == 0)  # every role's S0 # doctest: +SKIP
    """
    policy = policy or ContentPolicy()
    pt = policy_text(corpus, policy)
    mt = message_turns(corpus).filter(pl.col("turn_index").is_not_null())
    blocks = (
        pt.join(mt, on=["conversation_id", "message_index"], how="inner")
        .join(
            corpus.messages.select("conversation_id", "message_index", "timestamp"),
            on=["conversation_id", "message_index"],
        )
        .join(corpus.conversations.select("conversation_id", "doc_kind"), on="conversation_id")
    )
    blocks = blocks.sort("conversation_id", "message_index", "block_index")
    if blocks.height == 0:
        return schema.empty(schema.CHUNKS)
    chunk_block, chunk_text, chunk_tokens = _cut(blocks["text"].to_list())

    meta = blocks.drop("text").with_row_index("_b")
    out = (
        pl.DataFrame(
            {"_b": chunk_block, "text": chunk_text, "n_tokens": chunk_tokens},
            schema={"_b": pl.UInt32, "text": pl.String, "n_tokens": pl.Int32},
        )
        .join(meta, on="_b", how="left")
        .sort("_b", maintain_order=True)
        .with_columns(
            pl.int_range(pl.len())
            .over("conversation_id", "turn_index", "role")
            .cast(pl.Int32)
            .alias("sentence_index"),
            pl.int_range(pl.len())
            .over("conversation_id", "message_index")
            .cast(pl.Int32)
            .alias("sentence_in_message"),
            pl.int_range(pl.len()).over("conversation_id").cast(pl.Int32).alias("position"),
        )
        .with_columns(
            pl.concat_str(
                [
                    pl.col("conversation_id"),
                    pl.lit(":t"),
                    pl.col("turn_index").cast(pl.String),
                    pl.lit(":"),
                    pl.col("role"),
                    pl.lit(":s"),
                    pl.col("sentence_index").cast(pl.String),
                ]
            ).alias("chunk_id")
        )
    )
    return out.select([pl.col(c).cast(t) for c, t in schema.CHUNKS.items()])
