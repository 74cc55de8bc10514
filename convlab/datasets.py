"""Labelled data sets: LoCoMo and the bundled sample, as corpus + queries."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from convlab.loaders import Corpus, load
from convlab.paths import locomo_path, sample_data_path
from convlab.queries import read_queries

__all__ = ["LabelledData", "load_labelled", "locomo", "sample"]


@dataclass(frozen=True, slots=True)
class LabelledData:
    """A corpus and its labelled queries, with notes on how the labels were cleaned."""

    name: str
    corpus: Corpus
    queries: pl.DataFrame
    cleaning: dict[str, Any] = field(default_factory=dict)

    def select(self, conversations: list[str] | None) -> LabelledData:
        """Only these conversations and the queries scoped to them."""
        if not conversations:
            return self
        missing = set(conversations) - set(self.corpus.conversations["conversation_id"])
        if missing:
            raise ValueError(f"no such conversations in {self.name}: {sorted(missing)}")
        q = self.queries.filter(pl.col("conversation_id").is_in(conversations))
        return LabelledData(
            self.name, self.corpus.filter_conversations(conversations), q, self.cleaning
        )


def locomo(path: str | Path | None = None) -> LabelledData:
    """LoCoMo's 1,986 questions over its 5,882 utterances (docs are messages).

    ``cleaning`` reports how many evidence ids were malformed and repaired, dropped, and how many
    questions were left without evidence (those are kept but not scored on retrieval).
    """
    from convlab.loaders.locomo import evidence_report

    corpus = load(locomo_path(path), format="locomo")
    assert corpus.queries is not None
    return LabelledData("locomo", corpus, corpus.queries, evidence_report())


def sample(path: str | Path | None = None) -> LabelledData:
    """A labelled folder: its transcripts and ``queries.jsonl``.

    Transcripts are read from ``transcripts/`` when present, else from the folder itself; by
    default the folder is the bundled sample (``data/sample``).
    """
    root = Path(path) if path is not None else sample_data_path()
    corpus = load(root / "transcripts" if (root / "transcripts").is_dir() else root)
    return LabelledData("sample", corpus, read_queries(root / "queries.jsonl"))


def load_labelled(path: str | Path | None) -> LabelledData:
    """Labelled data from a path: LoCoMo or a labelled folder.

    LoCoMo when ``path`` is its json (or a folder holding one), else a folder with
    ``queries.jsonl``; ``None`` is the bundled sample.
    """
    if path is None:
        return sample()
    p = Path(path)
    if p.is_file() or (p / "locomo" / "locomo10.json").exists() or (p / "locomo10.json").exists():
        return locomo(p)
    return sample(p)
