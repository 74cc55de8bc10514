"""Late chunking's vectors with a fake token embedder whose token states are written by hand.

The fake reads a word as one token: [CLS] is (0, 0, 0), ``x`` (1, 0, 0), ``y`` (0, 1, 0), ``z``
(0, 0, 1), any other word (1, 1, 1), [SEP] (5, 5, 5). A chunk's ``n_tokens`` is its word count.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from convlab.build import build_indexes
from convlab.embed import CachedEmbedder
from convlab.embed.late import span_means
from convlab.loaders import load
from convlab.paths import sample_data_path
from convlab.pipeline.late import late_plan, late_vectors
from convlab.pipeline.units import units
from convlab.specs import UnitSpec
from tests.helpers import CountingHash, chunks_frame

WORDS = {"x": [1.0, 0.0, 0.0], "y": [0.0, 1.0, 0.0], "z": [0.0, 0.0, 1.0]}


class FakeTokens:
    """Hand-written token states; counts its forward passes and the texts they read."""

    name = "hash"
    model_id = "fake-tokens"
    dimension = 3

    def __init__(self) -> None:
        self.calls = 0
        self.texts: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError("late chunking never embeds a unit's text")

    def encode_tokens(self, texts: Sequence[str], max_tokens: int) -> list[np.ndarray]:
        self.calls += 1
        self.texts += texts
        out = []
        for t in texts:
            rows = [[0.0, 0.0, 0.0]] + [WORDS.get(w, [1.0, 1.0, 1.0]) for w in t.split()]
            out.append(np.array([*rows, [5.0, 5.0, 5.0]], dtype=np.float32))
            assert len(out[-1]) <= max_tokens
        return out


# a dialog of three messages, one pass at 256 tokens: "x y" | "x x" "z" | "y"
DIALOG = chunks_frame(
    [
        (0, 0, "user", 0, 0, "x y", 2),
        (0, 1, "assistant", 0, 0, "x x", 2),
        (0, 1, "assistant", 1, 1, "z", 1),
        (1, 2, "user", 0, 0, "y", 1),
    ],
    doc_kind="message",
)


def unit(v: list[float]) -> np.ndarray:
    a = np.array(v, dtype=np.float64)
    return a / np.linalg.norm(a)


def test_span_means_are_the_means_of_their_rows() -> None:
    states = np.array([[0, 0], [1, 2], [3, 4], [5, 0], [9, 9]], dtype=np.float32)
    assert span_means(states, [(1, 3), (3, 4), (2, 2)]).tolist() == [[2, 3], [5, 0], [0, 0]]


def test_a_late_unit_is_the_mean_of_its_chunks_token_states() -> None:
    fake = FakeTokens()
    plan = late_plan(DIALOG, 256)
    assert [p.text for p in plan.passes] == ["x y x x z y"]
    iso = units(DIALOG, "late_isolated")
    got = late_vectors(iso, DIALOG, fake, 256)
    # x y -> (1/2, 1/2, 0); x x -> (1, 0, 0); z -> (0, 0, 1); y -> (0, 1, 0); unit length
    want = np.stack([unit([0.5, 0.5, 0]), unit([1, 0, 0]), unit([0, 0, 1]), unit([0, 1, 0])])
    assert np.allclose(got, want)
    msg = units(DIALOG, "late_message")
    # message 1 is "x x" + "z": the mean of its three tokens (2/3, 0, 1/3)
    assert np.allclose(late_vectors(msg, DIALOG, fake, 256)[1], unit([2 / 3, 0, 1 / 3]))
    seq = units(DIALOG, "late_sequential")
    # the target "z" with its neighbours "x x" and "y": tokens x x z y -> (2/4, 1/4, 1/4)
    assert seq["chunk_ids"].to_list()[2] == [
        "c:t0:assistant:s0",
        "c:t0:assistant:s1",
        "c:t1:user:s0",
    ]
    assert np.allclose(late_vectors(seq, DIALOG, fake, 256)[2], unit([0.5, 0.25, 0.25]))
    assert fake.calls == 3
    assert fake.texts == ["x y x x z y"] * 3


def test_a_warm_cache_makes_no_forward_pass(tmp_path: Path) -> None:
    fake = FakeTokens()
    cached = CachedEmbedder(fake, tmp_path)
    first = late_vectors(units(DIALOG, "late_isolated"), DIALOG, cached, 256)
    # another strategy over the same text: the pass is the cache's, no second pass
    late_vectors(units(DIALOG, "late_turn_pair"), DIALOG, cached, 256)
    assert fake.calls == 1
    assert cached.stats.embedded == 1
    assert cached.stats.from_cache == 1
    again = FakeTokens()
    warm = CachedEmbedder(again, tmp_path)  # a later run: the segments on disk
    assert np.array_equal(late_vectors(units(DIALOG, "late_isolated"), DIALOG, warm, 256), first)
    assert again.calls == 0
    assert warm.stats.model_calls == 0


def test_a_pass_the_model_tokenises_otherwise_than_its_chunks_is_refused() -> None:
    wrong = DIALOG.with_columns(n_tokens=DIALOG["n_tokens"] + 1)  # each chunk one token too many
    with pytest.raises(ValueError, match="tokenised to 8 tokens, its chunks add up to 12"):
        late_vectors(units(wrong, "late_isolated"), wrong, FakeTokens(), 256)


def test_the_build_embeds_late_strategies_from_their_passes_only(tmp_path: Path) -> None:
    corpus = load(sample_data_path())
    inner = CountingHash(16)
    specs = [UnitSpec("late_sequential"), UnitSpec("late_turn_pair"), UnitSpec("message")]
    cached = CachedEmbedder(inner, tmp_path)
    built = build_indexes(
        corpus, specs, embedder=cached, dense=["late_sequential", "late_turn_pair"]
    )
    assert inner.seen == []  # no unit's text is embedded: only passes, in one forward call
    assert inner.calls == 1
    plan = late_plan(built["late_sequential"].chunks, 256)
    assert cached.stats.embedded == len(plan.passes)
    vectors = built["late_turn_pair"].vectors
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-6)
    assert not built["message"].vectors.any()  # not dense: zeros
    context = built["late_sequential"].units["context_tokens"].to_list()
    assert None not in context
    assert 2 < min(context) <= max(context) <= 256
