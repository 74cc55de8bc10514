"""The MiniLM backends, by name: one model, three ways to run it.

:data:`BACKENDS` maps a backend name to a factory of embedders:

- ``torch``: the sentence-transformers model, fp32 (:class:`convlab.embed.minilm.MiniLMEmbedder`);
- ``onnx``: the same weights exported to ONNX, fp32, no torch import at search time;
- ``onnx-int8``: the export dynamically quantized (see :mod:`convlab.embed.onnx`).

A backend other than torch carries its name in ``model_id``
(``sentence-transformers/all-MiniLM-L6-v2@onnx-int8``), so cache folders and store manifests keep
its vectors apart from torch's; :func:`backend_of` reads it back and :func:`query_embedder` picks
the backend that embeds queries for stored vectors.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from convlab.embed.minilm import MiniLMEmbedder
from convlab.model import MODEL_ID
from convlab.protocols import Embedder
from convlab.registry import Registry

__all__ = ["BACKENDS", "backend_of", "minilm_embedder", "query_embedder"]

BACKENDS: Registry[Callable[..., Embedder]] = Registry("embedding backend")
"""Backend name -> factory taking the backend's keyword options: the ``--backend`` choices."""


def _onnx(quantized: bool) -> Callable[..., Embedder]:
    def make(**options: Any) -> Embedder:
        from convlab.embed.onnx import OnnxEmbedder

        return OnnxEmbedder(quantized=quantized, **options)

    return make


BACKENDS.add("torch", MiniLMEmbedder)
BACKENDS.add("onnx", _onnx(False))
BACKENDS.add("onnx-int8", _onnx(True))


def minilm_embedder(backend: str = "torch", **options: Any) -> Embedder:
    """all-MiniLM-L6-v2 on the named backend (one of :data:`BACKENDS`).

    Args:
        backend: ``torch``, ``onnx`` or ``onnx-int8``.
        **options: passed to the backend's class (e.g. ``batch_size``, ``device``; for the ONNX
            backends also ``cache_dir`` and ``export``).

    Raises:
        ValueError: an unknown backend (the message lists the valid ones).

    Example:
        >>> minilm_embedder("onnx-int8").model_id
        'sentence-transformers/all-MiniLM-L6-v2@onnx-int8'
    """
    return BACKENDS.get(backend)(**options)


def backend_of(model_id: str) -> str:
    """The MiniLM backend that made vectors with this ``model_id`` (as in a store's manifest).

    Raises:
        ValueError: the id is not all-MiniLM-L6-v2 on a known backend.

    Example:
        >>> backend_of("sentence-transformers/all-MiniLM-L6-v2@onnx-int8")
        'onnx-int8'
    """
    if model_id == MODEL_ID:
        return "torch"
    name, _, backend = model_id.partition("@")
    if name != MODEL_ID or backend not in BACKENDS:
        raise ValueError(
            f"{model_id!r} is not {MODEL_ID} on one of the backends {', '.join(BACKENDS.names())}"
        )
    return backend


QUERY_DEVICE = "cpu"
"""Queries are embedded on the CPU: one short text at a time, where starting CUDA would cost more
than the query (the device never changes the vectors' space)."""

_SAME_VECTORS = {"torch": "onnx", "onnx": "torch"}
"""Backends whose vectors agree (cosine >= 0.9999, measured by eval/bench_onnx.py): a query
embedded by one can search vectors made by the other."""


def query_embedder(model_id: str, backend: str | None = None) -> Embedder:
    """The embedder for queries against vectors made by ``model_id``.

    With no ``backend``, vectors made by torch are searched with the exported fp32 ONNX model when
    it is on disk and onnxruntime is installed (no torch import: a search starts in well under a
    second instead of several), else with torch. This never exports a model.

    Args:
        model_id: the ``model_id`` recorded with the vectors (a store's manifest).
        backend: force this backend (it must make the same vectors as the recorded one).

    Raises:
        ValueError: ``backend`` makes vectors of another space than ``model_id``.
    """
    made_by = backend_of(model_id)
    if backend is not None:
        BACKENDS.get(backend)  # an unknown name fails here, listing the valid ones
        if backend not in (made_by, _SAME_VECTORS.get(made_by)):
            raise ValueError(
                f"the vectors were made by the {made_by} backend; a query embedded by {backend} "
                f"would not match them (use --backend {made_by}, or rebuild the vectors with "
                f"--backend {backend})"
            )
        return minilm_embedder(backend, device=QUERY_DEVICE)
    if made_by == "torch":
        from convlab.embed.onnx import onnx_model_file

        if importlib.util.find_spec("onnxruntime") and onnx_model_file(quantized=False).is_file():
            return minilm_embedder("onnx", export=False, device=QUERY_DEVICE)
    return minilm_embedder(made_by, device=QUERY_DEVICE)
