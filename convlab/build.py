"""``build_index``: the one build recipe, corpus -> turns -> chunks -> units -> embed -> index.

Every caller that turns transcripts into something searchable goes through here: the store's
incremental update (:mod:`convlab.store.update`), the notebook panel
(:meth:`convlab.app.widgets.SearchPanel.from_data`) and the notebooks. The result,
:class:`BuiltIndex`, holds the units, their vectors, the dense :class:`VectorIndex`, the
:class:`BM25Index` over the same rows, and a manifest of what made them.

The embedding step runs on an engine (:mod:`convlab.engines`): ``"local"`` (this process, the
default) or ``"ray"`` (Ray Data, the ``convlab-memory[ray]`` extra); the recipe and its result are
the same whichever engine embeds. Every text goes through a
:class:`convlab.embed.CachedEmbedder`, so a text embedded once (by any strategy, any earlier
build) is not embedded again.

An incremental build passes ``keep``: units embedded before (with their vectors), placed first,
so only the new corpus is chunked, unitised and embedded.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import polars as pl

from convlab._version import __version__
from convlab.embed import CachedEmbedder, embed_texts, embedder_name
from convlab.index import VectorIndex
from convlab.loaders import Corpus
from convlab.model import MAX_TOKENS
from convlab.pipeline.policy import ContentPolicy
from convlab.progress import current as current_progress
from convlab.protocols import Embedder

if TYPE_CHECKING:
    from convlab.engines import Engine
    from convlab.index.bm25 import BM25Index

__all__ = ["BuiltIndex", "Derived", "Embedded", "build_index", "build_indexes", "derive"]


class Embedded(NamedTuple):
    """Units embedded before, kept by an incremental build: row i of ``units`` is ``vectors[i]``."""

    units: pl.DataFrame
    vectors: np.ndarray


class Derived(NamedTuple):
    """The frames :func:`derive` makes from a corpus: turns, chunks and the strategy's units."""

    turns: pl.DataFrame
    chunks: pl.DataFrame
    units: pl.DataFrame


@dataclass(frozen=True, slots=True)
class BuiltIndex:
    """What :func:`build_index` made.

    Attributes:
        units: the :data:`convlab.schema.UNITS` frame, row i embedded as ``vectors[i]`` (the
            kept units first, then the new ones).
        vectors: ``(len(units), dimension)`` float32, L2-normalised (zeros when built with
            ``dense=False``).
        index: the searchable :class:`convlab.index.VectorIndex` over them.
        bm25: the :class:`convlab.index.bm25.BM25Index` over the same rows (None when built
            with ``lexical=False`` or when there is no unit: BM25 needs a document).
        turns: the :data:`convlab.schema.TURNS` frame of the new corpus.
        chunks: the :data:`convlab.schema.CHUNKS` frame of the new corpus.
        manifest: what made it (strategy, max_tokens, policy, model, kind, engine, counts, times).
    """

    units: pl.DataFrame
    vectors: np.ndarray
    index: VectorIndex
    bm25: BM25Index | None
    turns: pl.DataFrame
    chunks: pl.DataFrame
    manifest: dict[str, Any]


def units_fingerprint(units: pl.DataFrame) -> str:
    """sha256 of the unit ids and texts, in order: what the index holds."""
    h = hashlib.sha256()
    for uid, text in units.select("unit_id", "text").iter_rows():
        h.update(str(uid).encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
        h.update(str(text).encode("utf-8", "surrogatepass"))
        h.update(b"\x1e")
    return h.hexdigest()


def derive(
    corpus: Corpus,
    strategy: str,
    *,
    policy: ContentPolicy | None = None,
    max_tokens: int = MAX_TOKENS,
    chunks: pl.DataFrame | None = None,
    turns: pl.DataFrame | None = None,
) -> Derived:
    """Turns, chunks and the units of ``strategy`` over ``corpus``: no embedding.

    Args:
        corpus: the loaded corpus.
        strategy: a key of :data:`convlab.STRATEGIES`.
        policy: what text each block contributes (default :class:`ContentPolicy`).
        max_tokens: the unit's token limit, [CLS] and [SEP] included.
        chunks: the corpus's chunks when already made with ``policy`` (several strategies
            over one corpus chunk it once).
        turns: the corpus's turns when already made (likewise).

    Raises:
        ValueError: an unknown strategy.
        RuntimeError: the strategy produced duplicate unit ids.
    """
    from convlab.pipeline.chunks import chunks as make_chunks
    from convlab.pipeline.turns import turns as make_turns
    from convlab.pipeline.units import units as make_units

    if turns is None:
        turns = make_turns(corpus)
    if chunks is None:
        chunks = make_chunks(corpus, policy or ContentPolicy())
    units = make_units(chunks, strategy, max_tokens=max_tokens)
    if units["unit_id"].is_duplicated().any():
        raise RuntimeError(f"strategy {strategy!r} produced duplicate unit ids")
    return Derived(turns, chunks, units)


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
    chunks: pl.DataFrame | None = None,
    turns: pl.DataFrame | None = None,
    keep: Embedded | None = None,
    dense: bool = True,
    lexical: bool = True,
    vectors: np.ndarray | None = None,
    corpus_fingerprint: str | None = None,
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
        chunks: ``corpus``'s chunks, when already made with ``policy`` (see :func:`derive`).
        turns: ``corpus``'s turns, when already made (see :func:`derive`).
        keep: units embedded before and their vectors, placed before the new units (an
            incremental build: only ``corpus`` is embedded).
        dense: embed the units; False leaves zero vectors (a BM25-only system).
        lexical: build the BM25 index over the units.
        vectors: the new units' vectors, already computed (an evaluation embeds the texts of
            several strategies in one pass); nothing is embedded then. Row i is unit i of
            :func:`derive` for the same corpus, strategy, policy and max_tokens.
        corpus_fingerprint: recorded in the index's manifest (default: a hash of the unit ids
            and texts).
        **index_params: passed to :meth:`VectorIndex.build` (e.g. ``ef_search``).

    Raises:
        ValueError: an unknown strategy, kind or engine (listing the valid ones), or an
            uncached embedder without ``cache_dir``.
        RuntimeError: duplicate unit ids (within the new units or against ``keep``), or
            ``vectors`` of another shape than the new units.
        ImportError: ``engine="ray"`` without the ``convlab-memory[ray]`` extra.

    Example:
        >>> built = build_index("data/sample", "turn_pair", embedder=MiniLMEmbedder(),
        ...                     cache_dir="~/.cache/convlab", engine="ray")  # doctest: +SKIP
        >>> built.index.search(query_vectors, 5)  # doctest: +SKIP
    """
    from convlab.engines import get_engine
    from convlab.index import INDEX_KINDS
    from convlab.loaders import load

    if kind not in INDEX_KINDS:
        raise ValueError(f"unknown index kind {kind!r}; valid: {', '.join(INDEX_KINDS)}")
    cached = _cached(embedder, cache_dir)
    eng = get_engine(engine)
    policy = policy or ContentPolicy()
    started = time.perf_counter()
    if not isinstance(corpus, Corpus):
        corpus = load(corpus)
    current_progress().phase("chunk")
    derived = derive(
        corpus, strategy, policy=policy, max_tokens=max_tokens, chunks=chunks, turns=turns
    )
    derive_done = time.perf_counter()
    stats: dict[str, int] = {}
    try:
        if vectors is not None:
            new_vectors = _given(vectors, derived.units.height, cached.dimension)
        else:
            new_vectors, stats = _embed(derived.units["text"].to_list(), cached, eng, dense=dense)
    finally:
        if isinstance(engine, str):  # an engine made here is stopped here
            eng.close()
    embed_done = time.perf_counter()
    current_progress().phase("index")
    units, all_vectors = _with_kept(keep, derived.units, new_vectors, cached.dimension)
    return _assemble(
        corpus,
        strategy,
        derived._replace(units=units),
        all_vectors,
        model_id=cached.model_id,
        embedder=embedder_name(cached),
        policy=policy,
        max_tokens=max_tokens,
        kind=kind,
        lexical=lexical,
        corpus_fingerprint=corpus_fingerprint,
        kept_units=0 if keep is None else keep.units.height,
        seconds={"derive": derive_done - started, "embed": embed_done - derive_done},
        extra={"engine": eng.describe(), "embedding": stats, "dense": dense},
        index_params=index_params,
    )


def build_indexes(
    corpus: Corpus,
    strategies: Sequence[str],
    *,
    embedder: Embedder,
    policy: ContentPolicy | None = None,
    max_tokens: int = MAX_TOKENS,
    dense: Collection[str] | None = None,
    lexical: Collection[str] = (),
    kind: str = "flat",
    engine: str | Engine | None = None,
    keep: Mapping[str, Embedded] | None = None,
    corpus_fingerprint: str | None = None,
) -> dict[str, BuiltIndex]:
    """Several strategies over one corpus: the views of a system (an evaluation, a store).

    The recipe of :func:`build_index`, with the work shared: the corpus is chunked once, and the
    texts of every ``dense`` strategy are embedded in one pass, each distinct text once (a text
    two strategies share is embedded once, whatever the embedder). Each strategy is then indexed
    as :func:`build_index` indexes it.

    Args:
        corpus: the loaded corpus.
        strategies: keys of :data:`convlab.STRATEGIES`, in the order of the result.
        embedder: any embedder (wrap it in :class:`convlab.embed.CachedEmbedder` to reuse work
            across runs).
        policy: what text each block contributes (default :class:`ContentPolicy`).
        max_tokens: the unit's token limit, [CLS] and [SEP] included.
        dense: the strategies searched densely (None: all); the others get zero vectors.
        lexical: the strategies that get a BM25 index.
        kind: the index kind (a key of :data:`convlab.index.INDEX_KINDS`).
        engine: where the texts are embedded (see :func:`build_index`; ``embedder`` must then
            be a :class:`convlab.embed.CachedEmbedder`); None embeds in this process. Each
            manifest's ``embedding`` holds the pass's cache counts when ``embedder`` is a
            :class:`convlab.embed.CachedEmbedder`, and ``seconds.embed`` the pass's time.
        keep: per strategy, units embedded before and their vectors, placed before its new
            units (an incremental build, see :func:`build_index`).
        corpus_fingerprint: recorded in each index's manifest (see :func:`build_index`).

    Raises:
        ValueError: an unknown strategy or kind.
    """
    from convlab.index import INDEX_KINDS

    if kind not in INDEX_KINDS:
        raise ValueError(f"unknown index kind {kind!r}; valid: {', '.join(INDEX_KINDS)}")
    policy = policy or ContentPolicy()
    dense = set(strategies if dense is None else dense)
    started = time.perf_counter()
    derived: dict[str, Derived] = {}
    chunks = turns = None
    current_progress().phase("chunk")
    for strategy in strategies:
        derived[strategy] = derive(
            corpus, strategy, policy=policy, max_tokens=max_tokens, chunks=chunks, turns=turns
        )
        chunks, turns = derived[strategy].chunks, derived[strategy].turns
    derive_done = time.perf_counter()
    texts = [t for s in strategies if s in dense for t in derived[s].units["text"].to_list()]
    extra: dict[str, Any] = {}
    if engine is None:
        if isinstance(embedder, CachedEmbedder):  # what the pass took from the cache, embedded
            before = asdict(embedder.stats)
            vectors = embed_texts(texts, embedder)
            extra = {"embedding": _counts_since(before, embedder)}
        else:
            vectors = embed_texts(texts, embedder)
    else:
        from convlab.engines import get_engine

        eng = get_engine(engine)
        try:
            vectors, stats = _embed(texts, _cached(embedder, None), eng, dense=True)
        finally:
            if isinstance(engine, str):  # an engine made here is stopped here
                eng.close()
        extra = {"engine": eng.describe(), "embedding": stats}
    seconds = {"derive": derive_done - started, "embed": time.perf_counter() - derive_done}
    name = getattr(embedder, "name", None)
    out: dict[str, BuiltIndex] = {}
    offset = 0
    current_progress().phase("index")
    for strategy in strategies:
        d = derived[strategy]
        if strategy in dense:
            v = vectors[offset : offset + d.units.height]
            offset += d.units.height
        else:
            v = np.zeros((d.units.height, embedder.dimension), dtype=np.float32)
        kept = (keep or {}).get(strategy)
        units, v = _with_kept(kept, d.units, v, embedder.dimension)
        out[strategy] = _assemble(
            corpus,
            strategy,
            d._replace(units=units),
            v,
            model_id=embedder.model_id,
            embedder=name if isinstance(name, str) else None,
            policy=policy,
            max_tokens=max_tokens,
            kind=kind,
            lexical=strategy in lexical,
            extra={**extra, "dense": strategy in dense},
            index_params={},
            corpus_fingerprint=corpus_fingerprint,
            kept_units=0 if kept is None else kept.units.height,
            seconds=seconds,
        )
    return out


def _assemble(
    corpus: Corpus,
    strategy: str,
    derived: Derived,
    vectors: np.ndarray,
    *,
    model_id: str,
    embedder: str | None,
    policy: ContentPolicy,
    max_tokens: int,
    kind: str,
    lexical: bool,
    extra: dict[str, Any],
    index_params: dict[str, Any],
    corpus_fingerprint: str | None = None,
    kept_units: int = 0,
    seconds: dict[str, float] | None = None,
) -> BuiltIndex:
    """The last step of the recipe: the dense index, BM25 and the manifest over embedded units.

    ``extra`` goes into the manifest as it is (engine, embedding counts, dense).
    """
    started = time.perf_counter()
    units = derived.units
    fingerprint = units_fingerprint(units)
    index = VectorIndex.build(
        units,
        vectors,
        model_id=model_id,
        embedder=embedder,
        kind=kind,
        strategy=strategy,
        policy=policy.as_dict(),
        corpus_fingerprint=corpus_fingerprint or fingerprint,
        **index_params,
    )
    bm25 = _bm25(units) if lexical else None
    manifest = {
        "convlab_version": __version__,
        "strategy": strategy,
        "max_tokens": max_tokens,
        "policy": policy.as_dict(),
        "model_id": model_id,
        "embedder": embedder,
        "dimension": int(vectors.shape[1]),
        "kind": kind,
        "index_params": index_params,
        "counts": {
            "conversations": corpus.conversations.height,
            "chunks": derived.chunks.height,
            "units": units.height,
            "kept_units": kept_units,
        },
        **extra,
        "bm25": bm25 is not None,
        "units_fingerprint": fingerprint,
        "seconds": {**(seconds or {}), "index": time.perf_counter() - started},
    }
    return BuiltIndex(
        units=units,
        vectors=vectors,
        index=index,
        bm25=bm25,
        turns=derived.turns,
        chunks=derived.chunks,
        manifest=manifest,
    )


def _cached(embedder: Embedder, cache_dir: str | Path | None) -> CachedEmbedder:
    """``embedder`` itself when cached, else wrapped in a cache under ``cache_dir``."""
    if isinstance(embedder, CachedEmbedder):
        return embedder
    if cache_dir is None:
        raise ValueError("pass cache_dir, or an embedder wrapped in convlab.CachedEmbedder")
    return CachedEmbedder(embedder, Path(cache_dir).expanduser())


def _embed(
    texts: list[str], cached: CachedEmbedder, eng: Engine, *, dense: bool
) -> tuple[np.ndarray, dict[str, int]]:
    """The texts' vectors (zeros when not ``dense``) and the cache's counts for this call."""
    before = asdict(cached.stats)
    if dense:
        vectors = eng.embed(texts, cached)
    else:
        vectors = np.zeros((len(texts), cached.dimension), dtype=np.float32)
    return vectors, _counts_since(before, cached)


def _counts_since(before: dict[str, int], cached: CachedEmbedder) -> dict[str, int]:
    """The cache's counts (requested, distinct, from_cache, embedded, ...) since ``before``."""
    return {k: v - before[k] for k, v in asdict(cached.stats).items()}


def _given(vectors: np.ndarray, rows: int, dimension: int) -> np.ndarray:
    """Vectors passed in for the new units, their shape checked."""
    out = np.asarray(vectors, dtype=np.float32)
    if out.shape != (rows, dimension):
        raise RuntimeError(f"vectors of shape {out.shape} for {rows} units of {dimension} dims")
    return out


def _with_kept(
    keep: Embedded | None, units: pl.DataFrame, vectors: np.ndarray, dimension: int
) -> tuple[pl.DataFrame, np.ndarray]:
    """The kept units and vectors followed by the new ones."""
    if keep is None:
        return units, np.asarray(vectors, dtype=np.float32)
    if keep.units.height != len(keep.vectors):
        raise ValueError(f"keep has {keep.units.height} units but {len(keep.vectors)} vectors")
    parts = [f for f in (keep.units, units) if f.height]
    all_units = pl.concat(parts) if parts else units
    kept = np.asarray(keep.vectors, dtype=np.float32).reshape(-1, dimension)
    all_vectors = np.vstack([kept, np.asarray(vectors, dtype=np.float32).reshape(-1, dimension)])
    if all_units["unit_id"].is_duplicated().any():
        raise RuntimeError("duplicate unit ids between the kept and the new units")
    return all_units, all_vectors


def _bm25(units: pl.DataFrame) -> BM25Index | None:
    """BM25 over the units' texts (None for no unit: bm25s cannot index an empty corpus)."""
    from convlab.index.bm25 import BM25Index

    return BM25Index.build(units) if units.height else None
