"""``build_index``: the one build recipe, load -> chunks -> units -> embed -> index.

The embedding step runs on an engine (:mod:`convlab.engines`): ``"local"`` (this process, the
default) or ``"ray"`` (Ray Data, the ``convlab[ray]`` extra); the recipe and its result are the
same whichever engine embeds. Every text goes through a :class:`convlab.embed.CachedEmbedder`, so
a text embedded once (by any strategy, any earlier build) is not embedded again.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from convlab import __version__
from convlab.embed import CachedEmbedder, Embedder
from convlab.engines import Engine, get_engine
from convlab.index import VectorIndex
from convlab.loaders import Corpus
from convlab.pipeline.policy import ContentPolicy
from convlab.pipeline.units import MAX_TOKENS

__all__ = ["BuiltIndex", "build_index"]


@dataclass(frozen=True, slots=True)
class BuiltIndex:
    """What :func:`build_index` made.

    Attributes:
        units: the :data:`convlab.schema.UNITS` frame, row i embedded as ``vectors[i]``.
        vectors: ``(len(units), dimension)`` float32, L2-normalised.
        index: the searchable :class:`convlab.index.VectorIndex` over them.
        manifest: what made it (strategy, budget, policy, model, kind, engine, counts, times).
    """

    units: pl.DataFrame
    vectors: np.ndarray
    index: VectorIndex
    manifest: dict[str, Any]


def _units_fingerprint(units: pl.DataFrame) -> str:
    """sha256 of the unit ids and texts, in order: what the index holds."""
    h = hashlib.sha256()
    for uid, text in units.select("unit_id", "text").iter_rows():
        h.update(str(uid).encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
        h.update(str(text).encode("utf-8", "surrogatepass"))
        h.update(b"\x1e")
    return h.hexdigest()


def build_index(
    corpus: Corpus | str | Path,
    strategy: str,
    *,
    embedder: Embedder,
    policy: ContentPolicy | None = None,
    kind: str = "flat",
    engine: str | Engine = "local",
    max_tokens: int = MAX_TOKENS,
    cache_dir: str | Path | None = None,
    **index_params: Any,
) -> BuiltIndex:
    """Build the units of ``strategy`` over ``corpus``, embed them on ``engine`` and index them.

    Args:
        corpus: a loaded corpus, or a path :func:`convlab.load` reads.
        strategy: a key of :data:`convlab.STRATEGIES`.
        embedder: a :class:`convlab.embed.CachedEmbedder`, or any embedder (then wrapped in a
            cache under ``cache_dir``, which is required).
        policy: what text each block contributes (default :class:`ContentPolicy`).
        kind: the index kind (a key of :data:`convlab.index.INDEX_KINDS`).
        engine: ``"local"``, ``"ray"`` (a local Ray instance, stopped after the build) or an
            engine object (e.g. ``RayEngine(address=...)``; the caller closes it).
        max_tokens: the unit's token limit, [CLS] and [SEP] included.
        cache_dir: the embedding cache root, when ``embedder`` is not cached already.
        **index_params: passed to :meth:`VectorIndex.build` (e.g. ``ef_search``).

    Raises:
        ValueError: an unknown strategy, kind or engine (listing the valid ones), or an
            uncached embedder without ``cache_dir``.
        ImportError: ``engine="ray"`` without the ``convlab[ray]`` extra.

    Example:
        >>> built = build_index("data/sample", "turn_pair", embedder=MiniLMEmbedder(),
        ...                     cache_dir="~/.cache/convlab", engine="ray")  # doctest: +SKIP
        >>> built.index.search(query_vectors, 5)  # doctest: +SKIP
    """
    from convlab.index import INDEX_KINDS
    from convlab.loaders import load
    from convlab.pipeline.chunks import chunks as make_chunks
    from convlab.pipeline.units import units as make_units

    if kind not in INDEX_KINDS:
        raise ValueError(f"unknown index kind {kind!r}; valid: {', '.join(INDEX_KINDS)}")
    if isinstance(embedder, CachedEmbedder):
        cached = embedder
    elif cache_dir is None:
        raise ValueError("pass cache_dir, or an embedder wrapped in convlab.CachedEmbedder")
    else:
        cached = CachedEmbedder(embedder, Path(cache_dir).expanduser())
    eng = get_engine(engine)
    owned = isinstance(engine, str)
    policy = policy or ContentPolicy()
    started = time.perf_counter()
    if not isinstance(corpus, Corpus):
        corpus = load(corpus)
    chunks = make_chunks(corpus, policy)
    units = make_units(chunks, strategy, max_tokens=max_tokens)
    if units["unit_id"].is_duplicated().any():
        raise RuntimeError(f"strategy {strategy!r} produced duplicate unit ids")
    derived = time.perf_counter()
    before = asdict(cached.stats)
    try:
        vectors = eng.embed(units["text"].to_list(), cached)
    finally:
        if owned:
            eng.close()
    embedded = time.perf_counter()
    stats = {k: v - before[k] for k, v in asdict(cached.stats).items()}
    fingerprint = _units_fingerprint(units)
    index = VectorIndex.build(
        units,
        vectors,
        model_id=cached.model_id,
        kind=kind,
        strategy=strategy,
        policy=policy.as_dict(),
        corpus_fingerprint=fingerprint,
        **index_params,
    )
    manifest = {
        "convlab_version": __version__,
        "strategy": strategy,
        "max_tokens": max_tokens,
        "policy": policy.as_dict(),
        "model_id": cached.model_id,
        "dimension": int(cached.dimension),
        "kind": kind,
        "index_params": index_params,
        "engine": eng.describe(),
        "counts": {
            "conversations": corpus.conversations.height,
            "chunks": chunks.height,
            "units": units.height,
        },
        "embedding": stats,
        "units_fingerprint": fingerprint,
        "seconds": {
            "derive": derived - started,
            "embed": embedded - derived,
            "index": time.perf_counter() - embedded,
        },
    }
    return BuiltIndex(units=units, vectors=vectors, index=index, manifest=manifest)
