"""``build_index``: the one build recipe, corpus -> turns -> chunks -> units -> embed -> index.

Every caller that turns transcripts into something searchable goes through here: the store's
incremental update, the notebook panel and the notebooks. What is built is named by two typed
specs (:mod:`convlab.specs`): a :class:`UnitSpec` (strategy, max_tokens, content policy) and an
:class:`IndexSpec` (index kind and parameters). The result, :class:`BuiltIndex`, holds the units,
their vectors, the dense :class:`VectorIndex`, the :class:`BM25Index` over the same rows, and a
typed :class:`convlab.built.BuildManifest` of what made them.

The embedding runs on an engine (:mod:`convlab.engines`), the result the same whichever embeds;
every text goes through a :class:`convlab.embed.CachedEmbedder`: a text embedded once (by any
strategy, any earlier build) is not embedded again. An incremental build passes ``keep``: units
embedded before (with their vectors), placed first, so only the new corpus is embedded.
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
from convlab.built import BuildCounts, BuildManifest, Derived, Embedded, Given, with_kept
from convlab.embed import CachedEmbedder, embed_texts, embedder_name
from convlab.index import VectorIndex
from convlab.loaders import Corpus
from convlab.pipeline.late import late_vectors, late_views
from convlab.progress import current as current_progress
from convlab.protocols import Embedder
from convlab.specs import IndexSpec, UnitSpec
from convlab.strategies.late import late_window

if TYPE_CHECKING:
    from convlab.engines import Engine
    from convlab.index.bm25 import BM25Index
    from convlab.pipeline.policy import ContentPolicy

__all__ = ["BuiltIndex", "build_index", "build_indexes", "derive"]


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
        manifest: what made it (:class:`BuildManifest`).
    """

    units: pl.DataFrame
    vectors: np.ndarray
    index: VectorIndex
    bm25: BM25Index | None
    turns: pl.DataFrame
    chunks: pl.DataFrame
    manifest: BuildManifest


class _Pass(NamedTuple):
    """What the embedding pass tells every index built from it."""

    model_id: str
    embedder: str | None
    engine: dict[str, Any] | None
    embedding: dict[str, int]
    seconds: dict[str, float]
    corpus_fingerprint: str | None = None


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
    unit: UnitSpec | str,
    *,
    chunks: pl.DataFrame | None = None,
    turns: pl.DataFrame | None = None,
) -> Derived:
    """Turns, chunks and the units of ``unit`` over ``corpus`` (with its keys): no embedding.

    Args:
        corpus: the loaded corpus.
        unit: what a unit is (a strategy's name: its defaults); its ``keys`` are appended.
        chunks: the corpus's chunks when already made with ``unit.policy`` (several strategies
            over one corpus chunk it once).
        turns: the corpus's turns when already made (likewise).

    Raises:
        ValueError: an unknown strategy. RuntimeError: the strategy produced duplicate unit ids.
    """
    from convlab.pipeline.chunks import chunks as make_chunks
    from convlab.pipeline.keys import expand_keys
    from convlab.pipeline.turns import turns as make_turns
    from convlab.pipeline.units import units as make_units

    unit = UnitSpec(unit) if isinstance(unit, str) else unit
    if turns is None:
        turns = make_turns(corpus)
    if chunks is None:
        chunks = make_chunks(corpus, unit.policy)
    units = make_units(chunks, unit.strategy, max_tokens=unit.max_tokens)
    if unit.keys is not None:
        units = expand_keys(units, chunks, unit.keys, max_tokens=unit.max_tokens, corpus=corpus)
    if units["unit_id"].is_duplicated().any():
        raise RuntimeError(f"strategy {unit.strategy!r} produced duplicate unit ids")
    return Derived(turns, chunks, units)


def build_index(
    corpus: Corpus | str | Path,
    unit: UnitSpec | str,
    *,
    embedder: Embedder,
    index: IndexSpec | None = None,
    engine: str | Engine = "local",
    cache_dir: str | Path | None = None,
    keep: Embedded | None = None,
    given: Given | None = None,
    dense: bool = True,
    lexical: bool = True,
) -> BuiltIndex:
    """Build the units of ``unit`` over ``corpus``, embed them on ``engine`` and index them.

    Args:
        corpus: a loaded corpus, or a path :func:`convlab.load` reads.
        unit: what a unit is: strategy, max_tokens, content policy (a strategy's name: its
            defaults).
        embedder: a :class:`convlab.embed.CachedEmbedder`, or any embedder (then wrapped in a
            cache under ``cache_dir``, which is required).
        index: the index kind and its parameters (default: flat).
        engine: ``"local"``, ``"ray"`` (a local Ray instance, stopped after the build) or an
            engine object (e.g. ``RayEngine(address=...)``; the caller closes it).
        cache_dir: the embedding cache root, when ``embedder`` is not cached already.
        keep: units embedded before and their vectors, placed before the new units (an
            incremental build: only ``corpus`` is embedded).
        given: chunks, turns or vectors of the new corpus already made (see :class:`Given`).
        dense: embed the units; False leaves zero vectors (a BM25-only system).
        lexical: build the BM25 index over the units.

    Raises:
        ValueError: an unknown strategy, kind or engine (listing the valid ones), or an
            uncached embedder without ``cache_dir``.
        RuntimeError: duplicate unit ids (within the new units or against ``keep``), or given
            vectors of another shape than the new units.
        ImportError: ``engine="ray"`` without the ``convlab-memory[ray]`` extra.

    Example:
        >>> built = build_index("data/sample", "turn_pair", embedder=MiniLMEmbedder(),
        ...                     cache_dir="~/.cache/convlab", engine="ray")  # doctest: +SKIP
        >>> built.index.search(query_vectors, 5)  # doctest: +SKIP
    """
    from convlab.engines import get_engine
    from convlab.loaders import load

    unit = UnitSpec(unit) if isinstance(unit, str) else unit
    index = _checked(index)
    given = given or Given()
    cached = _cached(embedder, cache_dir)
    eng = get_engine(engine)
    started = time.perf_counter()
    if not isinstance(corpus, Corpus):
        corpus = load(corpus)
    current_progress().phase("chunk")
    derived = derive(corpus, unit, chunks=given.chunks, turns=given.turns)
    derive_done = time.perf_counter()
    stats: dict[str, int] = {}
    try:
        if given.vectors is not None:  # their shape checked
            new_vectors = np.asarray(given.vectors, dtype=np.float32)
            if new_vectors.shape != (rows := derived.units.height, cached.dimension):
                raise RuntimeError(
                    f"vectors of shape {new_vectors.shape} for {rows} units of "
                    f"{cached.dimension} dims"
                )
        elif dense and (window := late_window(unit.strategy)) is not None:
            before = asdict(cached.stats)  # late chunking: passes in this process, any engine
            new_vectors = late_vectors(derived.units, derived.chunks, cached, window)
            stats = _counts_since(before, cached)
        else:
            new_vectors, stats = _embed(derived.units["text"].to_list(), cached, eng, dense=dense)
    finally:
        if isinstance(engine, str):  # an engine made here is stopped here
            eng.close()
    embed_done = time.perf_counter()
    current_progress().phase("index")
    units, all_vectors = with_kept(keep, derived.units, new_vectors, cached.dimension)
    done = _Pass(
        model_id=cached.model_id,
        embedder=embedder_name(cached),
        engine=eng.describe(),
        embedding=stats,
        seconds={"derive": derive_done - started, "embed": embed_done - derive_done},
    )
    kept = 0 if keep is None else keep.units.height
    derived = derived._replace(units=units)
    return _assemble(corpus, unit, index, derived, all_vectors, done, (dense, lexical), kept)


def build_indexes(
    corpus: Corpus,
    units: Sequence[UnitSpec],
    *,
    embedder: Embedder,
    index: IndexSpec | None = None,
    dense: Collection[str] | None = None,
    lexical: Collection[str] = (),
    engine: str | Engine | None = None,
    keep: Mapping[str, Embedded] | None = None,
    corpus_fingerprint: str | None = None,
) -> dict[str, BuiltIndex]:
    """Several strategies over one corpus: the views of a system (an evaluation, a store).

    The recipe of :func:`build_index`, with the work shared: the corpus is chunked once per
    content policy, and the texts of every ``dense`` strategy are embedded in one pass, each
    distinct text once (a text two strategies share is embedded once, whatever the embedder).
    Each strategy is then indexed as :func:`build_index` indexes it.

    Args:
        corpus: the loaded corpus.
        units: one spec per strategy, in the order of the result (keyed by strategy).
        embedder: any embedder (a :class:`convlab.embed.CachedEmbedder` reuses work).
        index: the index kind and its parameters of every strategy (default: flat).
        dense: the strategies searched densely (None: all); the others get zero vectors.
        lexical: the strategies that get a BM25 index.
        engine: where the texts are embedded (see :func:`build_index`; ``embedder`` must then
            be a :class:`CachedEmbedder`); None embeds in this process. Each manifest's
            ``embedding`` holds the pass's cache counts (a :class:`CachedEmbedder`).
        keep: per strategy, units embedded before and their vectors, placed before its new
            units (an incremental build, see :func:`build_index`).
        corpus_fingerprint: recorded in each index's manifest (default: a hash of its unit ids
            and texts).

    Raises:
        ValueError: an unknown strategy or kind, or a strategy named twice.
    """
    index = _checked(index)
    strategies = [u.strategy for u in units]
    if len(set(strategies)) != len(strategies):
        raise ValueError(f"a strategy named twice in {', '.join(strategies)}")
    dense = set(strategies if dense is None else dense)
    started = time.perf_counter()
    current_progress().phase("chunk")
    derived = _derive_all(corpus, units)
    derive_done, cpu = time.perf_counter(), time.process_time()  # CPU: every thread's
    windows = {s: w for s in strategies if s in dense and (w := late_window(s)) is not None}
    plain = [s for s in strategies if s in dense and s not in windows]
    texts = [t for s in plain for t in derived[s].units["text"].to_list()]
    before = asdict(embedder.stats) if isinstance(embedder, CachedEmbedder) else None
    vectors, engine_record, embedding = _embed_pass(texts, embedder, engine)
    frames = {s: (derived[s].units, derived[s].chunks) for s in windows}
    late, shared = late_views(frames, windows, embedder)
    if before is not None and late and isinstance(embedder, CachedEmbedder):  # late's counts too
        embedding = {**_counts_since(before, embedder), "late_shared": shared}
    seconds = {"derive": derive_done - started, "embed": time.perf_counter() - derive_done}
    name = getattr(embedder, "name", None)
    done = _Pass(
        model_id=embedder.model_id,
        embedder=name if isinstance(name, str) else None,
        engine=engine_record,
        embedding=embedding,
        seconds={**seconds, "embed_cpu": time.process_time() - cpu},
        corpus_fingerprint=corpus_fingerprint,
    )
    out: dict[str, BuiltIndex] = {}
    offset = 0
    current_progress().phase("index")
    for unit in units:
        d = derived[unit.strategy]
        if unit.strategy in late:  # late chunking: one pass per window, shared via the cache
            v = late[unit.strategy]
        elif unit.strategy in dense:
            v = vectors[offset : offset + d.units.height]
            offset += d.units.height
        else:
            v = np.zeros((d.units.height, embedder.dimension), dtype=np.float32)
        kept = (keep or {}).get(unit.strategy)
        all_units, v = with_kept(kept, d.units, v, embedder.dimension)
        switches = (unit.strategy in dense, unit.strategy in lexical)
        n_kept = 0 if kept is None else kept.units.height
        out[unit.strategy] = _assemble(
            corpus, unit, index, d._replace(units=all_units), v, done, switches, n_kept
        )
    return out


def _derive_all(corpus: Corpus, units: Sequence[UnitSpec]) -> dict[str, Derived]:
    """Each unit spec's frames, the corpus turned once and chunked once per content policy."""
    chunked: dict[ContentPolicy, pl.DataFrame] = {}
    turns = None
    out: dict[str, Derived] = {}
    for unit in units:
        out[unit.strategy] = derive(corpus, unit, chunks=chunked.get(unit.policy), turns=turns)
        chunked[unit.policy], turns = out[unit.strategy].chunks, out[unit.strategy].turns
    return out


def _embed_pass(
    texts: list[str], embedder: Embedder, engine: str | Engine | None
) -> tuple[np.ndarray, dict[str, Any] | None, dict[str, int]]:
    """The texts' vectors in one pass, the engine's description and the cache's counts.

    Without an engine the texts are embedded in this process (no engine recorded); the counts
    are empty when ``embedder`` is not a :class:`CachedEmbedder`.
    """
    if engine is None:
        if not isinstance(embedder, CachedEmbedder):
            return embed_texts(texts, embedder), None, {}
        before = asdict(embedder.stats)  # what the pass took from the cache, embedded
        vectors = embed_texts(texts, embedder)
        return vectors, None, _counts_since(before, embedder)
    from convlab.engines import get_engine

    eng = get_engine(engine)
    try:
        vectors, stats = _embed(texts, _cached(embedder, None), eng, dense=True)
    finally:
        if isinstance(engine, str):  # an engine made here is stopped here
            eng.close()
    return vectors, eng.describe(), stats


def _assemble(
    corpus: Corpus,
    unit: UnitSpec,
    spec: IndexSpec,
    derived: Derived,
    vectors: np.ndarray,
    done: _Pass,
    switches: tuple[bool, bool],
    kept_units: int,
) -> BuiltIndex:
    """The last step of the recipe: the dense index, BM25 and the manifest over embedded units.

    ``switches``: whether the units were embedded (dense) and whether BM25 is built (lexical).
    """
    dense, lexical = switches
    started = time.perf_counter()
    units = derived.units
    fingerprint = units_fingerprint(units)
    index = VectorIndex.build(
        units,
        vectors,
        model_id=done.model_id,
        embedder=done.embedder,
        spec=spec,
        strategy=unit.strategy,
        policy=unit.policy.as_dict(),
        corpus_fingerprint=done.corpus_fingerprint or fingerprint,
    )
    bm25 = _bm25(units) if lexical else None
    manifest = BuildManifest(
        convlab_version=__version__,
        strategy=unit.strategy,
        max_tokens=unit.max_tokens,
        policy=unit.policy.as_dict(),
        model_id=done.model_id,
        embedder=done.embedder,
        dimension=int(vectors.shape[1]),
        kind=spec.kind,
        index_params=dict(spec.params),
        counts=BuildCounts(
            conversations=corpus.conversations.height,
            chunks=derived.chunks.height,
            units=units.height,
            kept_units=kept_units,
        ),
        engine=done.engine,
        embedding=done.embedding,
        dense=dense,
        bm25=bm25 is not None,
        units_fingerprint=fingerprint,
        seconds={**done.seconds, "index": time.perf_counter() - started},
    )
    return BuiltIndex(
        units=units,
        vectors=vectors,
        index=index,
        bm25=bm25,
        turns=derived.turns,
        chunks=derived.chunks,
        manifest=manifest,
    )


def _checked(index: IndexSpec | None) -> IndexSpec:
    """The index spec (default flat), its kind checked against the registry."""
    from convlab.index import INDEX_KINDS

    index = index or IndexSpec()
    if index.kind not in INDEX_KINDS:
        raise ValueError(f"unknown index kind {index.kind!r}; valid: {', '.join(INDEX_KINDS)}")
    return index


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


def _bm25(units: pl.DataFrame) -> BM25Index | None:
    """BM25 over the units' texts (None for no unit: bm25s cannot index an empty corpus)."""
    from convlab.index.bm25 import BM25Index

    return BM25Index.build(units) if units.height else None
