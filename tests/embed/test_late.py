"""Token states of the real MiniLM: what late chunking pools (the ``model`` tier)."""

from __future__ import annotations

import numpy as np
import pytest

from convlab.embed import MiniLMEmbedder
from convlab.model import MAX_POSITIONS
from convlab.pipeline.tokens import count_tokens


def test_the_mean_of_a_texts_token_states_is_its_vector(minilm: MiniLMEmbedder) -> None:
    texts = ["I moved to Lisbon in May.", "Caroline went to the LGBTQ support group yesterday."]
    states = minilm.encode_tokens(texts, 256)
    assert [len(s) for s in states] == [n + 2 for n in count_tokens(texts)]
    pooled = np.stack([s.mean(axis=0) for s in states])
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    cosine = (pooled * minilm.encode(texts)).sum(axis=1)
    assert cosine.min() > 0.9999


def test_a_pass_longer_than_the_training_length_reads_up_to_the_positions(
    minilm: MiniLMEmbedder,
) -> None:
    text = " ".join(["the cat sat on the mat."] * 50)  # 7 tokens each: 352 with [CLS], [SEP]
    (states,) = minilm.encode_tokens([text], MAX_POSITIONS)
    assert states.shape == (352, 384)
    with pytest.raises(ValueError, match="a text of 352 tokens does not fit 256"):
        minilm.encode_tokens([text], 256)
