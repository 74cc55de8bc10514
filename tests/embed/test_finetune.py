"""The fine-tuning loop: a few seeded steps on the CPU, saved into the cache, searched with."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from convlab.embed import CachedEmbedder, make_embedder
from convlab.embed.finetune import (
    FineTuneRecipe,
    Triple,
    _batches,
    ensure_finetuned,
    finetuned_model_id,
)

TRIPLES = [
    Triple("when did Ann adopt the dog", "Ann: we adopted Rex in May", "Bob: I like jazz"),
    Triple("what does Bob play", "Bob: I play the trumpet", "Ann: the dog barks"),
    Triple("where did Ann travel", "Ann: Paris was lovely in June", "Bob: my car broke"),
    Triple("what did Bob cook", "Bob: I made lasagna last night", "Ann: I read a book"),
]


def test_batches_are_seeded_and_cover_every_triple_each_epoch() -> None:
    recipe = FineTuneRecipe(epochs=2, batch_size=3, seed=7)
    a, b = _batches(7, recipe), _batches(7, recipe)
    assert [x.tolist() for x in a] == [x.tolist() for x in b]
    # 7 triples in batches of 3: 3, 3 and a last one of 1 (dropped: MNRL needs two) per epoch
    assert [len(x) for x in a] == [3, 3, 3, 3]
    assert len(set(np.concatenate(a[:2]).tolist())) == 6
    other = _batches(7, FineTuneRecipe(epochs=2, batch_size=3, seed=8))
    assert [x.tolist() for x in other] != [x.tolist() for x in a]


def test_a_recipe_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="max_seq_length"):
        FineTuneRecipe(max_seq_length=512)
    with pytest.raises(ValueError, match="batch_size"):
        FineTuneRecipe(batch_size=1)


@pytest.mark.model
def test_a_few_steps_train_deterministically_into_the_cache(tmp_path: Path) -> None:
    recipe = FineTuneRecipe(batch_size=2, max_seq_length=16, learning_rate=1e-4, threads=1)
    model_id = finetuned_model_id("ab" * 32, recipe, 0, 2)
    folder, stats = ensure_finetuned(model_id, lambda: TRIPLES, recipe, cache_dir=tmp_path)
    assert stats is not None
    assert (stats.triples, stats.steps) == (4, 2)
    assert ensure_finetuned(model_id, lambda: [], recipe, cache_dir=tmp_path) == (folder, None)
    again = finetuned_model_id("ab" * 32, recipe, 1, 2)  # another fold: trained again, apart
    folder2, _ = ensure_finetuned(again, lambda: TRIPLES, recipe, cache_dir=tmp_path)
    assert folder2 != folder
    ft = make_embedder("minilm-ft", model_id=model_id, cache_dir=tmp_path, device="cpu")
    ft2 = make_embedder("minilm-ft", model_id=again, cache_dir=tmp_path, device="cpu")
    base = make_embedder("minilm", device="cpu")
    texts = [t.positive for t in TRIPLES]
    v, v2, vb = ft.encode(texts), ft2.encode(texts), base.encode(texts)
    np.testing.assert_array_equal(v, v2)  # same triples, recipe and threads: same weights
    assert np.abs(v - vb).max() > 1e-4  # the steps moved the weights
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    cached = CachedEmbedder(ft, tmp_path / "emb")
    cached.encode(texts)
    assert list((tmp_path / "emb").iterdir())  # the cache keys it by its own model id
    assert ft.model_id == model_id != base.model_id
