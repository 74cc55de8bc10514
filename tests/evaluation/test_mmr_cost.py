"""MMR over normalised relevance must not cost hybrid search its recall (issue 21).

Measured with the real model on the bundled sample (68 queries): hybrid + MMR 0.7 must be
within 0.01 Recall@5 of hybrid alone, for both hybrid systems of the default comparison. Before
MMR z-scored its relevance it mixed RRF scores (~0.03) with cosine redundancy and fell to 0.641
and 0.631 (from 0.867 and 0.862).
"""

from __future__ import annotations

import polars as pl

from convlab.embed.minilm import MiniLMEmbedder
from convlab.evaluation.compare import comparison_config
from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.evaluate import evaluate
from convlab.retrieval import Retrieval, SearchOptions
from convlab.systems.system import System


def test_hybrid_with_mmr_keeps_hybrids_recall_on_the_sample(minilm: MiniLMEmbedder) -> None:
    systems = []
    for strategy in ("message", "turn_pair"):
        plain = System(name=f"hybrid:{strategy}", strategy=strategy, retrieval=Retrieval.HYBRID)
        systems += [
            plain,
            System(
                name=f"hybrid:{strategy}+mmr",
                strategy=strategy,
                retrieval=Retrieval.HYBRID,
                options=SearchOptions.of(mmr=0.7),
            ),
        ]
    data = load_labelled(None)  # eval.run's settings on the sample
    config = comparison_config(data, budgets=(512,), scope=None, baseline=None)
    result = evaluate(data, systems, embedder=minilm, config=config, progress=False)
    r5 = dict(result.table(("recall@5",)).select("system", "recall@5").iter_rows())
    for strategy in ("message", "turn_pair"):
        plain, diverse = r5[f"hybrid:{strategy}"], r5[f"hybrid:{strategy}+mmr"]
        assert diverse >= plain - 0.01, (strategy, plain, diverse)
        assert plain > 0.8  # hybrid itself still finds the sample's answers
    assert isinstance(result.hits["hybrid:turn_pair+mmr"], pl.DataFrame)
