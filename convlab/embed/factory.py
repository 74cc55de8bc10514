"""Embedders by name: :data:`EMBEDDERS` (``minilm``, ``minilm-ft``, ``static``, ``hash``).

Callers (the CLI, ``eval.run``, the store) pick an embedder by its registered name, and a
manifest records that name in its ``embedder`` field, so the embedder that searches a store is
chosen from the record, never guessed from the model id.
"""

from __future__ import annotations

from typing import Any, Protocol

from convlab.embed.backends import BACKENDS, minilm_embedder, query_embedder
from convlab.embed.device import parse_device
from convlab.embed.hashing import HashEmbedder
from convlab.protocols import Embedder
from convlab.registry import Registry

__all__ = ["EMBEDDERS", "EmbedderFactory", "companion_embedder", "embedder_name", "make_embedder"]


class EmbedderFactory(Protocol):
    """Makes an embedder: ``backend`` and the ``model_id`` of stored vectors may be None."""

    def __call__(self, *, backend: str | None, model_id: str | None, **options: Any) -> Embedder:
        """A new embedder; ``options`` are its own keyword arguments."""
        ...


EMBEDDERS: Registry[EmbedderFactory] = Registry("embedder")
"""Embedder name -> factory: the ``--embedder`` choices."""


@EMBEDDERS.register("minilm")
def _minilm(*, backend: str | None, model_id: str | None, **options: Any) -> Embedder:
    """all-MiniLM-L6-v2; for a search (``model_id`` given), the backend fit for those vectors."""
    if model_id is not None:
        if options:
            raise ValueError(f"a query embedder takes no options ({', '.join(sorted(options))})")
        return query_embedder(model_id, backend)
    return minilm_embedder(backend or "torch", **options)


@EMBEDDERS.register("minilm-ft")
def _minilm_ft(*, backend: str | None, model_id: str | None, **options: Any) -> Embedder:
    """all-MiniLM-L6-v2 fine-tuned on labelled data (:mod:`convlab.embed.finetune`), torch only.

    ``model_id`` names the model (its data, recipe and fold); it must be in the cache already.
    """
    if backend not in (None, "torch"):
        raise ValueError(f"the fine-tuned model runs on torch only, not {backend}")
    if model_id is None:
        raise ValueError("minilm-ft needs the model_id of a fine-tuned model")
    from convlab.embed.finetune import FineTunedEmbedder

    return FineTunedEmbedder(model_id, **options)


@EMBEDDERS.register("static")
def _static(*, backend: str | None, model_id: str | None, **options: Any) -> Embedder:
    """MiniLM distilled into a static token table (:mod:`convlab.embed.static`), numpy only.

    It has no backend of its own: a MiniLM backend name is accepted and has no effect (the
    table is distilled once, whatever runs the model); ``device`` likewise. ``model_id``, when
    given, must be a static model's.
    """
    from convlab.embed.static import StaticEmbedder

    if backend is not None:
        BACKENDS.get(backend)  # an unknown name fails here, listing the valid ones
    if "device" in options:
        parse_device(str(options.pop("device")))
    embedder = StaticEmbedder(**options)
    if model_id is not None and model_id != embedder.model_id:
        raise ValueError(f"{model_id!r} is not the static model's vectors ({embedder.model_id})")
    return embedder


@EMBEDDERS.register("hash")
def _hash(*, backend: str | None, model_id: str | None, **options: Any) -> Embedder:
    """The hashed bag of words, for tests of the commands.

    It runs one way only, on the CPU (numpy): a valid MiniLM backend name or ``device`` is
    accepted and has no effect (so the commands' ``--backend`` and ``--device`` handling can be
    tested without the model); an unknown one fails.
    """
    if backend is not None:
        BACKENDS.get(backend)  # an unknown name fails here, listing the valid ones
    if "device" in options:
        parse_device(str(options.pop("device")))  # an unknown name fails, listing the valid ones
    if model_id is not None and "dimension" not in options and model_id.startswith("hash-"):
        options["dimension"] = int(model_id.removeprefix("hash-"))
    return HashEmbedder(**options)


def make_embedder(
    name: str = "minilm",
    backend: str | None = None,
    *,
    model_id: str | None = None,
    **options: Any,
) -> Embedder:
    """The embedder registered as ``name`` (one of :data:`EMBEDDERS`).

    Args:
        name: ``minilm``, ``minilm-ft`` (a fine-tuned model: ``model_id`` names it), ``static``
            (MiniLM distilled with Model2Vec) or ``hash``.
        backend: for ``minilm``, one of :data:`convlab.embed.BACKENDS` (None: torch to build,
            or the best fit for ``model_id`` to search).
        model_id: the ``model_id`` recorded with stored vectors: the embedder is then one whose
            queries match them.
        **options: the embedder's own keyword arguments (``batch_size``, ``device``,
            ``dimension``, ...).

    Raises:
        ValueError: an unknown name or backend (listing the valid ones), or a backend that does
            not make vectors of ``model_id``'s space.

    Example:
        >>> make_embedder("hash").model_id
        'hash-64'
        >>> make_embedder("minilm", "onnx-int8").model_id
        'sentence-transformers/all-MiniLM-L6-v2@onnx-int8'
    """
    return EMBEDDERS.get(name)(backend=backend, model_id=model_id, **options)


def embedder_name(embedder: Embedder) -> str:
    """The registered name of ``embedder`` (its ``name`` attribute), for manifests.

    Raises:
        ValueError: the embedder has no ``name`` that is registered in :data:`EMBEDDERS`.
    """
    name = getattr(embedder, "name", None)
    if not isinstance(name, str) or name not in EMBEDDERS:
        raise ValueError(
            f"{type(embedder).__qualname__} has no registered name (its `name` attribute is "
            f"{name!r}); valid: {', '.join(EMBEDDERS.names())}"
        )
    return name


def companion_embedder(name: str, like: Embedder) -> Embedder:
    """The embedder ``name`` beside ``like``: a view's own (``static:sequential``) in a run.

    It is cached where ``like`` is (a :class:`convlab.embed.CachedEmbedder`'s root, each
    model in its own folder), or uncached when ``like`` is.

    Example:
        >>> companion_embedder("hash", make_embedder("hash")).model_id
        'hash-64'
    """
    from convlab.embed.cache import CachedEmbedder

    made = make_embedder(name)
    if isinstance(like, CachedEmbedder):
        return CachedEmbedder(made, like.directory.parent)
    return made
