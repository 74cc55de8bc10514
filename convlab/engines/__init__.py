"""Engines: where the embedding of a build runs (this process, or a Ray cluster).

An :class:`Engine` embeds texts through a :class:`convlab.embed.CachedEmbedder`: rows come back
in input order, each distinct text is embedded once, and texts already in the cache never leave
this process. Engines live in a registry (:data:`ENGINES`) filled by :func:`register_engine`, so
the CLI's ``--engine`` choices and the error for an unknown name are built from it.

- ``local`` (:class:`convlab.engines.local.LocalEngine`): the model in this process, the default.
- ``ray`` (:class:`convlab.engines.ray.RayEngine`): Ray Data, an actor pool loading the model
  once per actor; needs the ``convlab-memory[ray]`` extra.

Example:
    >>> engine = get_engine("local")
    >>> engine.embed(["a b", "a b"], CachedEmbedder(HashEmbedder(8), tmp)).shape  # doctest: +SKIP
    (2, 8)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from convlab.registry import Registry

if TYPE_CHECKING:
    from convlab.embed import CachedEmbedder

__all__ = ["ENGINES", "Engine", "IpcFrames", "get_engine", "register_engine"]


@runtime_checkable
class Engine(Protocol):
    """Embeds texts for a build, wherever the work runs."""

    name: str

    def embed(self, texts: Sequence[str], embedder: CachedEmbedder) -> np.ndarray:
        """``(len(texts), dimension)`` float32 rows in input order.

        Each distinct text is embedded once; texts already in ``embedder``'s cache are not sent
        anywhere, and new vectors are added to that cache.
        """
        ...

    def close(self) -> None:
        """Release what the engine started (a local Ray instance); it may be used again after."""
        ...

    def describe(self) -> dict[str, Any]:
        """The engine's name and settings, saved in manifests."""
        ...


IpcFrames = dict[str, bytes]
"""A chunk of transcripts read: its frames as Arrow IPC bytes, by frame name (what an engine's
``load_parts`` returns: :class:`convlab.loaders.registry.PartLoader`)."""


E = TypeVar("E", bound=Engine)

ENGINES: Registry[Callable[..., Engine]] = Registry("engine")
"""Engine name -> factory taking the engine's keyword options: the ``--engine`` choices."""


def register_engine(name: str) -> Callable[[Callable[..., E]], Callable[..., E]]:
    """Class decorator adding an engine factory to :data:`ENGINES` under ``name``.

    Raises:
        ValueError: ``name`` is registered already.
    """
    return ENGINES.register(name)


def get_engine(name: str | Engine, **options: Any) -> Engine:
    """The engine called ``name``, made with ``options`` (an engine object is returned as is).

    Raises:
        ValueError: an unknown name, listing the valid ones, or options given with an object.
    """
    if not isinstance(name, str):
        if options:
            raise ValueError("engine options are given to the engine's constructor, not here")
        return name
    return ENGINES.get(name)(**options)


# the built-in engines register themselves (convlab.engines.ray imports Ray only when used)
from convlab.engines import local as _local  # noqa: E402, F401
from convlab.engines import ray as _ray  # noqa: E402, F401
