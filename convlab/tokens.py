"""Exact token counts from the model's own tokenizer, batched, and splitting at token boundaries.

Counts here are *content* tokens: the model adds [CLS] and [SEP] (:data:`SPECIAL_TOKENS`) to
every text it embeds, so a text fits the model when ``count + SPECIAL_TOKENS <= MAX_TOKENS``.
WordPiece pre-tokenizes on whitespace and punctuation, so texts joined with a space count the sum
of their parts; :mod:`convlab.strategies` relies on this and the tests check it.
"""

from __future__ import annotations

from collections.abc import Sequence

from convlab.model import MAX_TOKENS, tokenizer

__all__ = ["MAX_CONTENT_TOKENS", "SPECIAL_TOKENS", "count_tokens", "split_at_tokens"]

SPECIAL_TOKENS = 2
MAX_CONTENT_TOKENS = MAX_TOKENS - SPECIAL_TOKENS

_BATCH = 4096


def count_tokens(texts: Sequence[str]) -> list[int]:
    """Content-token count of each text (no [CLS]/[SEP]), batched through the fast tokenizer.

    Example:
        >>> count_tokens(["Hello world.", ""])
        [3, 0]
    """
    tok = tokenizer()
    out: list[int] = []
    for start in range(0, len(texts), _BATCH):
        batch = list(texts[start : start + _BATCH])
        encodings = tok.encode_batch_fast(batch, add_special_tokens=False)
        out.extend(len(e.ids) for e in encodings)
    return out


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
