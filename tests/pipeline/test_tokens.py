"""Token counts: the ASCII fast path against the model's own tokenizer, the reference."""

from __future__ import annotations

import string
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import convlab
from convlab.model import tokenizer
from convlab.pipeline.tokens import _word_tokens, count_tokens


def reference(texts: list[str]) -> list[int]:
    encodings = tokenizer().encode_batch_fast(texts, add_special_tokens=False)
    return [len(e.ids) for e in encodings]


def test_counts_worked_out_by_hand() -> None:
    # lowercased, split at whitespace and at every punctuation mark; each word is one
    # vocabulary entry: don ' t stop ! -> 5; "unaffable" is un ##aff ##able -> 3
    assert count_tokens(["Don't stop!", "unaffable", "", "   \n\t"]) == [5, 3, 0, 0]
    # a vertical tab is deleted by BERT's normalizer, so "a\x0bb" is the one word "ab"
    assert count_tokens(["a\x0bb"]) == reference(["a\x0bb"]) == [1]
    # a word over 100 characters is a single [UNK]
    assert count_tokens(["x" * 100, "x" * 101]) == reference(["x" * 100, "x" * 101])
    assert count_tokens(["x" * 101]) == [1]


def test_real_texts_count_as_the_tokenizer_counts(transcripts: Path, locomo_file: Path) -> None:
    texts: list[str] = []
    for root in (transcripts, locomo_file):
        corpus = convlab.load(root)
        texts += [t for t in corpus.blocks["text"].to_list() if t]
        texts += corpus.blocks["tool_input"].drop_nulls().to_list()
    assert len(texts) > 9_000
    assert any(not t.isascii() for t in texts)  # both paths are exercised
    assert count_tokens(texts) == reference(texts)


ALPHABET = string.printable + "\x00\x01\x0b\x0c\x1c\x1f\x7f\u00a0éü中—’\u200b"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET, max_size=80), min_size=1, max_size=20))
def test_any_text_counts_as_the_tokenizer_counts(texts: list[str]) -> None:
    assert count_tokens(texts) == reference(texts)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=120))
def test_word_counts_are_the_wordpiece_counts(word: str) -> None:
    assert _word_tokens(word) == reference([word])[0]
