"""Exact token counts of the model's own tokenizer, fast, and splitting at token boundaries.

Counts here are *content* tokens: the model adds [CLS] and [SEP]
(:data:`convlab.model.SPECIAL_TOKENS`) to every text it embeds, so a text fits the model when
``count + SPECIAL_TOKENS <= MAX_TOKENS`` (the token constants live in :mod:`convlab.model`).
WordPiece pre-tokenizes on whitespace and punctuation, so texts joined with a space count the sum
of their parts; :mod:`convlab.strategies` relies on this and the tests check it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from convlab.model import MAX_CONTENT_TOKENS, tokenizer

__all__ = ["count_tokens", "split_at_tokens"]

_BATCH = 4096


def count_tokens(texts: Sequence[str]) -> list[int]:
    """Content-token count of each text (no [CLS]/[SEP]), exactly as the model's tokenizer counts.

    Most conversation text is ASCII, and for ASCII the model's BERT normalizer only lowercases
    (its accent stripping and CJK spacing change nothing, and texts with control characters,
    which it deletes, are excluded), and its pre-tokenizer splits at whitespace and makes every
    other non-alphanumeric character a word. Such a text's count is the sum of its words'
    WordPiece counts, each word's looked up once (:func:`_word_tokens`), checked against the
    tokenizer in the tests (eval/bench_load.py's 325,242 sentences of 200,000 messages: 7.0 s
    for the sentence step, 14.8 s encoding every text). Every other text goes through the fast
    tokenizer, batched.

    Example:
        >>> count_tokens(["Hello world.", ""])
        [3, 0]
    """
    out: list[int] = []
    slow: list[int] = []
    words, unsafe, per_word = _WORDS.findall, _UNSAFE.search, _word_tokens
    for i, text in enumerate(texts):
        if text.isascii() and unsafe(text) is None:
            out.append(sum(map(per_word, words(text.lower()))))
        else:
            out.append(0)
            slow.append(i)
    if slow:
        tok = tokenizer()
        for start in range(0, len(slow), _BATCH):
            batch = [texts[i] for i in slow[start : start + _BATCH]]
            encodings = tok.encode_batch_fast(batch, add_special_tokens=False)
            for i, e in zip(slow[start : start + _BATCH], encodings, strict=True):
                out[i] = len(e.ids)
    return out


_WORDS = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
"""BERT's pre-tokenizer on lowercased ASCII: runs of letters and digits; any other non-space
character (all printable ASCII punctuation is punctuation to BERT) alone."""

_UNSAFE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
"""ASCII control characters other than tab, newline and carriage return: BERT's normalizer
deletes them (joining the words around them), so texts holding them take the slow path."""


@lru_cache(maxsize=1 << 20)
def _word_tokens(word: str) -> int:
    """WordPiece tokens of one pre-tokenized, lowercased word (the model's own WordPiece)."""
    return len(tokenizer().model.tokenize(word))


def split_at_tokens(text: str, max_tokens: int = MAX_CONTENT_TOKENS) -> list[str]:
    """Cut ``text`` into pieces of at most ``max_tokens`` content tokens, at word boundaries.

    Pieces are slices of the original text, cut where a pre-tokenized word starts, so each piece
    re-tokenizes to exactly its share of the tokens; only a single word longer than
    ``max_tokens`` is cut inside (and re-checked). Whitespace at the cuts is stripped.

    Example:
        >>> [count_tokens([p])[0] for p in split_at_tokens("a b c d e", 2)]
        [2, 2, 1]
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    enc = tokenizer().encode(text, add_special_tokens=False)
    n = len(enc.ids)
    if n <= max_tokens:
        return [text]
    words = enc.word_ids
    starts = [off[0] for off in enc.offsets]
    pieces: list[str] = []
    i = 0
    while i < n:
        j = min(i + max_tokens, n)
        if j < n:
            k = j
            while k > i and words[k] == words[k - 1]:
                k -= 1
            j = k if k > i else j  # one word longer than max_tokens: cut inside it
        begin = 0 if i == 0 else starts[i]
        end = starts[j] if j < n else len(text)
        piece = text[begin:end].strip()
        if piece:
            if count_tokens([piece])[0] > max_tokens:  # only after a cut inside a word
                pieces.extend(split_at_tokens(piece[: len(piece) // 2], max_tokens))
                pieces.extend(split_at_tokens(piece[len(piece) // 2 :], max_tokens))
            else:
                pieces.append(piece)
        i = j
    return pieces
